/** withCredits with billing stubbed: which reservation is made, and how it is settled; room asked and reservations released without reserving. */
import { expect } from 'chai';
import { Errors, type ServiceBroker } from 'moleculer';
import sinon from 'sinon';
import type { AccountContext, Reservation } from '../../services/shared/contracts';
import { bandwidth, ensureRoom, releaseCredits, withCaptureCredits, withCredits } from '../../services/billing/public/credits';
import { serviceError } from '../../services/shared/errors';

const account: AccountContext = { accountId: 'acc1', plan: { name: 'free', paid: false, screenshot_limit: 100, max_concurrent: 1, max_queued: 2 }, addons: {} };
const reservation: Reservation = { id: 'r1', accountId: 'acc1', month: '2026-11', amounts: { screenshots: 1 } };

/** A broker whose billing answers from the stub; `calls()` lists the actions called, in order. */
function billing() {
  const call = sinon.stub().callsFake(async (action: string) => {
    if (action === 'billing.reserve' || action === 'billing.reserveFor') return reservation;
    if (action === 'billing.commit') return { committed: true };
    if (action === 'billing.refund') return { refunded: true };
    throw new Error(`unexpected ${action}`);
  });
  const logger = { error: sinon.stub() };
  return { broker: { call, logger } as unknown as ServiceBroker, call, logger, calls: () => call.getCalls().map((c) => c.args[0] as string) };
}

describe('withCredits (billing stubbed)', () => {
  it('reserves with the account (its gates checked), runs the work with the reservation, then commits', async () => {
    const b = billing();
    const work = sinon.stub().resolves('done');
    expect(await withCredits(b.broker, { account, amounts: { screenshots: 1 }, features: { ownAi: true } }, work)).to.equal('done');
    expect(b.calls()).to.deep.equal(['billing.reserve', 'billing.commit']);
    expect(b.call.firstCall.args[1]).to.deep.equal({ account, amounts: { screenshots: 1 }, features: { ownAi: true } });
    expect(work.calledOnceWithExactly(reservation)).to.equal(true);
    expect(b.call.secondCall.args[1]).to.deep.equal({ reservation });
  });

  it('reserves by account id (billing.reserveFor) when only the id is known', async () => {
    const b = billing();
    await withCredits(b.broker, { accountId: 'acc1', amounts: { screenshots: 1 }, reservationId: 'job:j1' }, async () => 1);
    expect(b.calls()).to.deep.equal(['billing.reserveFor', 'billing.commit']);
    expect(b.call.firstCall.args[1]).to.deep.equal({ accountId: 'acc1', amounts: { screenshots: 1 }, reservationId: 'job:j1' });
  });

  it('refunds when the work fails, and rethrows the work’s error', async () => {
    const b = billing();
    const failure = serviceError('page_load_failed', 'no page');
    const err = await withCredits(b.broker, { account, amounts: { screenshots: 1 } }, () => Promise.reject(failure)).catch((e) => e);
    expect(err).to.equal(failure);
    expect(b.calls()).to.deep.equal(['billing.reserve', 'billing.refund']);
  });

  it('does not run the work, nor refund, when the reservation is refused; onFailure still hears of it', async () => {
    const b = billing();
    const refused = serviceError('screenshot_limit_reached', 'used up');
    b.call.withArgs('billing.reserve').rejects(refused);
    const work = sinon.stub().resolves('never');
    const onFailure = sinon.stub().resolves('refund');
    const err = await withCredits(b.broker, { account, amounts: { screenshots: 1 } }, work, { onFailure }).catch((e) => e);
    expect(err).to.equal(refused);
    expect(work.called).to.equal(false);
    expect(onFailure.calledOnceWithExactly(refused)).to.equal(true);
    expect(b.calls()).to.deep.equal(['billing.reserve']);
  });

  it('leaves the reservation pending when settle says hold, and refunds when it says refund', async () => {
    const held = billing();
    await withCredits(held.broker, { account, amounts: { screenshots: 1 } }, async () => null, { settle: () => 'hold' });
    expect(held.calls()).to.deep.equal(['billing.reserve']);
    const refunded = billing();
    await withCredits(refunded.broker, { account, amounts: { screenshots: 1 } }, async () => null, { settle: () => 'refund' });
    expect(refunded.calls()).to.deep.equal(['billing.reserve', 'billing.refund']);
  });

  it('lets onFailure keep the credit pending (another run settles it) and runs it before the refund', async () => {
    const b = billing();
    const held = await withCredits(b.broker, { account, amounts: { screenshots: 1 } }, () => Promise.reject(new Error('x')), {
      onFailure: async () => 'hold',
    }).catch((e) => e);
    expect(held).to.be.an('error');
    expect(b.calls()).to.deep.equal(['billing.reserve']);

    const order: string[] = [];
    const c = billing();
    c.call.withArgs('billing.refund').callsFake(async () => order.push('refund'));
    await withCredits(c.broker, { account, amounts: { screenshots: 1 } }, () => Promise.reject(new Error('x')), {
      onFailure: async () => {
        order.push('onFailure');
        return 'refund';
      },
    }).catch(() => undefined);
    expect(order).to.deep.equal(['onFailure', 'refund']);
  });

  it('asks for a refund billing did not take again, and answers the work’s error, not the refund’s', async () => {
    const b = billing();
    b.call
      .withArgs('billing.refund')
      .onFirstCall()
      .rejects(new Errors.ServiceNotAvailableError({ action: 'billing.refund' }));
    const err = await withCredits(b.broker, { account, amounts: { screenshots: 1 } }, () => Promise.reject(serviceError('capture_timeout', 'slow'))).catch(
      (e) => e,
    );
    expect(err.type).to.equal('capture_timeout');
    expect(b.calls()).to.deep.equal(['billing.reserve', 'billing.refund', 'billing.refund']);
  });

  it('answers the work’s value when the commit fails, and commits again (never a refund: the work succeeded)', async () => {
    const b = billing();
    b.call
      .withArgs('billing.commit')
      .onFirstCall()
      .rejects(new Errors.ServiceNotAvailableError({ action: 'billing.commit' }));
    expect(await withCredits(b.broker, { account, amounts: { screenshots: 1 } }, async () => 'done')).to.equal('done');
    expect(b.calls()).to.deep.equal(['billing.reserve', 'billing.commit', 'billing.commit']);
  });

  it('asks again only while billing is away: a settlement it refuses is logged once and left pending', async () => {
    const b = billing();
    b.call.withArgs('billing.commit').rejects(new Error('the reservation is malformed'));
    expect(await withCredits(b.broker, { account, amounts: { screenshots: 1 } }, async () => 'done')).to.equal('done');
    expect(b.calls()).to.deep.equal(['billing.reserve', 'billing.commit']);
    expect(b.logger.error.calledOnce).to.equal(true);
    expect(String(b.logger.error.firstCall.args[0])).to.match(
      /billing\.commit of reservation r1 \(account acc1\) failed; it stays pending: the reservation is malformed/,
    );
  });
});

describe('withCaptureCredits (billing stubbed)', () => {
  /** Billing whose reservations carry what was asked; `log()` lists "action kind" in order. */
  function kinds() {
    const call = sinon
      .stub()
      .callsFake(async (action: string, params: { amounts?: Record<string, number>; reservationId?: string; reservation?: Reservation }) => {
        if (action === 'billing.reserve' || action === 'billing.reserveFor') {
          if (params.amounts?.ai_credits && refuseAi) throw serviceError('ai_credits_exhausted', 'used up');
          return { id: params.reservationId ?? Object.keys(params.amounts ?? {}).join(), accountId: 'acc1', month: '2026-11', amounts: params.amounts ?? {} };
        }
        return {};
      });
    let refuseAi = false;
    const log = () =>
      call.getCalls().map((c) => {
        const p = c.args[1] as { amounts?: Record<string, number>; reservation?: Reservation };
        return `${String(c.args[0]).replace('billing.', '')} ${Object.keys(p.amounts ?? p.reservation?.amounts ?? {}).join()}`;
      });
    return { broker: { call } as unknown as ServiceBroker, call, log, refuseAi: () => (refuseAi = true) };
  }
  const request = { account, amounts: { screenshots: 1 } };
  const analysed = (v: { ai: boolean }) => v.ai;

  it('reserves the screenshot, then the AI credit, before the work; commits both when the analysis ran', async () => {
    const b = kinds();
    const work = sinon.stub().callsFake(async () => {
      expect(b.log()).to.deep.equal(['reserve screenshots', 'reserve ai_credits']);
      return { ai: true };
    });
    await withCaptureCredits(b.broker, request, true, work, { analysed });
    expect(work.calledOnce).to.equal(true);
    expect(b.log()).to.deep.equal(['reserve screenshots', 'reserve ai_credits', 'commit ai_credits', 'commit screenshots']);
  });

  it('charges the screenshot and gives the AI credit back when the analysis did not run', async () => {
    const b = kinds();
    await withCaptureCredits(b.broker, request, true, async () => ({ ai: false }), { analysed });
    expect(b.log()).to.deep.equal(['reserve screenshots', 'reserve ai_credits', 'refund ai_credits', 'commit screenshots']);
  });

  it('refunds both when the capture fails, and the screenshot credit when the AI credits are used up (no work)', async () => {
    const failed = kinds();
    await withCaptureCredits(failed.broker, request, true, () => Promise.reject(new Error('no page')), { analysed }).catch(() => undefined);
    expect(failed.log()).to.deep.equal(['reserve screenshots', 'reserve ai_credits', 'refund ai_credits', 'refund screenshots']);
    const exhausted = kinds();
    exhausted.refuseAi();
    const work = sinon.stub();
    const err = await withCaptureCredits(exhausted.broker, request, true, work, { analysed }).catch((e) => e);
    expect(err.type).to.equal('ai_credits_exhausted');
    expect(work.called).to.equal(false);
    expect(exhausted.log()).to.deep.equal(['reserve screenshots', 'reserve ai_credits', 'refund screenshots']);
  });

  it('names the AI reservation after the screenshot one, and holds both when the policy holds', async () => {
    const b = kinds();
    await withCaptureCredits(b.broker, { accountId: 'acc1', amounts: { screenshots: 1 }, reservationId: 'job:j1' }, true, async () => ({ ai: false }), {
      analysed,
      settle: () => 'hold',
    });
    expect(b.call.getCalls().map((c) => (c.args[1] as { reservationId?: string }).reservationId)).to.deep.equal(['job:j1', 'job:j1:ai']);
    expect(b.log()).to.deep.equal(['reserveFor screenshots', 'reserveFor ai_credits']);
  });

  it('without an analysis billed in credits, reserves the screenshot credit alone', async () => {
    const b = kinds();
    await withCaptureCredits(b.broker, request, false, async () => ({ ai: false }), { analysed });
    expect(b.log()).to.deep.equal(['reserve screenshots', 'commit screenshots']);
  });
});

describe('room and release (billing stubbed): nothing reserved only to be given back', () => {
  /** Billing that answers room and release; `calls()` lists [action, params] in order. */
  function stub() {
    const call = sinon.stub().callsFake(async (action: string) => {
      if (action === 'billing.checkRoom') return { left: { screenshots: 1, ai_credits: 1, bandwidth_bytes: 1, research_domains: 1 }, month: '2026-11' };
      if (action === 'billing.release') return { released: true };
      throw new Error(`unexpected ${action}`);
    });
    return { broker: { call } as unknown as ServiceBroker, call, calls: () => call.getCalls().map((c) => [c.args[0], c.args[1]]) };
  }

  it('asks the room of a request with billing.checkRoom alone, and answers its 402', async () => {
    const b = stub();
    await ensureRoom(b.broker, { account, amounts: { research_domains: 3 } });
    expect(b.calls()).to.deep.equal([['billing.checkRoom', { account, amounts: { research_domains: 3 } }]]);
    const c = stub();
    c.call.withArgs('billing.checkRoom').rejects(serviceError('domain_research_limit_reached', 'used up'));
    const err = await ensureRoom(c.broker, { account, amounts: { research_domains: 3 } }).catch((e) => e);
    expect(err.type).to.equal('domain_research_limit_reached');
  });

  it('checks a real location’s bandwidth by asking the room of one byte, and charges the bytes once known', async () => {
    const b = stub();
    b.call.withArgs('billing.charge').resolves({ charged: true });
    await bandwidth.ensureRoom(b.broker, 'acc1');
    await bandwidth.charge(b.broker, 'acc1', 5000);
    expect(b.calls()).to.deep.equal([
      ['billing.checkRoom', { accountId: 'acc1', amounts: { bandwidth_bytes: 1 } }],
      ['billing.charge', { accountId: 'acc1', amounts: { bandwidth_bytes: 5000 } }],
    ]);
  });

  it('releases a capture’s reservations by id (the AI one named as withCaptureCredits names it), reserving nothing', async () => {
    const b = stub();
    await releaseCredits(b.broker, 'acc1', 'job:j1', true);
    expect(b.calls()).to.have.deep.members([
      ['billing.release', { accountId: 'acc1', reservationId: 'job:j1' }],
      ['billing.release', { accountId: 'acc1', reservationId: 'job:j1:ai' }],
    ]);
    const plain = stub();
    await releaseCredits(plain.broker, 'acc1', 'research:r1d0');
    expect(plain.calls()).to.deep.equal([['billing.release', { accountId: 'acc1', reservationId: 'research:r1d0' }]]);
  });

  it('never answers a release’s failure (a reservation not given back expires)', async () => {
    const b = stub();
    b.call.withArgs('billing.release').rejects(new Error('billing is down'));
    await releaseCredits(b.broker, 'acc1', 'job:j1', true);
    expect(b.call.callCount).to.equal(2);
  });
});
