/**
 * takeAgain (services/shared/take-again.ts) on its own: work taken again after the losses its
 * rule accepts, as often as the rule lets it, answered as the rule says when it may not be;
 * any other failure thrown as it is. The capture engine and the api's call to capture use it
 * (engine.unit.test.ts, capture-call.unit.test.ts).
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { type TakeAgainRule, takeAgain } from '../../services/shared/take-again';

class Lost extends Error {}

function rule(max: number): TakeAgainRule<Lost, 'max'> & { observed: sinon.SinonStub } {
  return {
    lost: (err) => (err instanceof Lost ? err : null),
    refuse: (_lost, attempts) => (attempts >= max ? 'max' : null),
    answer: (_lost, why) => new Error(`not again: ${why}`),
    observed: sinon.stub(),
  };
}

describe('takeAgain (unit)', () => {
  it('takes the work again after a loss, numbering the attempts, and answers what the next attempt gave', async () => {
    const attempt = sinon.stub().onFirstCall().rejects(new Lost('gone')).onSecondCall().resolves('done');
    const r = rule(3);
    expect(await takeAgain(attempt, r)).to.equal('done');
    expect(attempt.args).to.deep.equal([[1], [2]]);
    expect(r.observed.args.map(([, again]) => again)).to.deep.equal([true]);
  });

  it('answers as the rule says once it refuses another attempt', async () => {
    const attempt = sinon.stub().rejects(new Lost('gone'));
    const r = rule(2);
    const err = await takeAgain(attempt, r).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).to.equal('not again: max');
    sinon.assert.calledTwice(attempt);
    expect(r.observed.args.map(([, again]) => again)).to.deep.equal([true, false]);
  });

  it('throws any other failure as it is, at once', async () => {
    const other = new Error('the page was refused');
    const attempt = sinon.stub().rejects(other);
    const err = await takeAgain(attempt, rule(5)).then(
      () => null,
      (e: Error) => e,
    );
    expect(err).to.equal(other);
    sinon.assert.calledOnce(attempt);
  });

  it('waits the pause the rule asks for before the next attempt', async () => {
    const clock = sinon.useFakeTimers();
    try {
      const attempt = sinon.stub().onFirstCall().rejects(new Lost('none there')).onSecondCall().resolves('done');
      const settled = takeAgain(attempt, { ...rule(3), pauseMs: () => 500 });
      await clock.tickAsync(499);
      sinon.assert.calledOnce(attempt);
      await clock.tickAsync(1);
      expect(await settled).to.equal('done');
    } finally {
      clock.restore();
    }
  });
});
