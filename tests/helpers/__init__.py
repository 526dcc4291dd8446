"""What several test modules share: environments, command-line helpers, hostile payloads, file bombs."""
