/**
 * Mocha's spec reporter plus one closing line, "N passed, N failed", that CI reads.
 */
import Mocha from 'mocha';

class TotalsReporter extends Mocha.reporters.Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.once(Mocha.Runner.constants.EVENT_RUN_END, () => {
      const s = runner.stats ?? { passes: 0, failures: 0, pending: 0 };
      // Registered after the spec reporter's epilogue, so this is the last line printed.
      console.log(`\n${s.passes} passed, ${s.failures} failed${s.pending ? `, ${s.pending} skipped` : ''}`);
    });
  }
}

export = TotalsReporter;
