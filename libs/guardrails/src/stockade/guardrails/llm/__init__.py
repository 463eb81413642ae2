"""LLMRails and the model providers it drives (OpenAI, Azure OpenAI, Anthropic, Gemini, Bedrock)."""
