// Placeholder until the HTTPCore module lands.
