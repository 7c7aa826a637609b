"""The tables app.evaluation owns and the SQL on them: a feature keeps its own tables,
the store keeps the log (docs/architecture.md, "Where SQL lives")."""
