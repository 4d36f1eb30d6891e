// Test support: throwaway PostgreSQL clusters for DB-backed tests.
