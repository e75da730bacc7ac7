/** Shared test setup: chai plugins and quiet logs. */
process.env.LOG_LEVEL ??= 'warn';
