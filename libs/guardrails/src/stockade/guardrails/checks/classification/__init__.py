"""Content classification by semantic routing (jailbreak, malicious, injection)."""
