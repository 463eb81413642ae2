"""Console pages of guardrail policies (issue 31)."""
