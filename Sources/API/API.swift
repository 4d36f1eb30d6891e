// Placeholder until the API module lands.
