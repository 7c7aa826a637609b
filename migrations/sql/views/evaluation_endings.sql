CREATE VIEW evaluation_endings AS
SELECT evaluation_run, ending, count(*) AS sessions
FROM evaluation_sessions
GROUP BY evaluation_run, ending;
