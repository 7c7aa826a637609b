"""Agents (CodeAct), their tools and prompts, and the controller that drives them from the log."""
