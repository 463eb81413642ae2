"""toxicity-classifier: a reference text-classification service for the guardrails toxicity check."""
