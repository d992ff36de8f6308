"""Classification tasks (guardrails, question router): one family, registered via entry point."""
