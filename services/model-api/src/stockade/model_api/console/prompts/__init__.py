"""The prompt, skill and review pages: every read and write goes to prompt-api as the signed-in user."""
