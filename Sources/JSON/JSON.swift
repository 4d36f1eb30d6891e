// Placeholder until the JSON module lands.
