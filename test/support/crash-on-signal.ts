/**
 * Preloaded into a service process by a test (`node -r`): SIGUSR2 makes the process throw
 * an uncaught exception from a timer, as a bug in any of its modules would.
 */
process.on('SIGUSR2', () => {
  setTimeout(() => {
    throw new Error('a bug: thrown on purpose by the test (SIGUSR2)');
  }, 0);
});
