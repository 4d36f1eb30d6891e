// Placeholder until the Domain module lands.
