/**
 * The operator CLI (`npm run --silent admin -- <command>`). It runs the billing service
 * in-process against the configured database (no transporter), so every change goes
 * through the same code as the running system; a change to keys, plans or add-ons is then
 * broadcast to the running billing instances when a transporter is configured (announce).
 *
 *   accounts create --plan free|paid [--addons byo_ai,byo_proxy,ai_credits,bandwidth_2gb:N] [--json]
 *   accounts list [--json]
 *   accounts set-plan <account_id> --plan <plan> [--addons ...] [--json]
 *   keys rotate <account_id> [--json]
 *   plans list [--json]
 *   plans set <name> [--screenshots <N>] [--paid true|false] [--concurrency <N>] [--queue <N>] [--json]
 *   webhook-secret show <account_id> [--json]
 *   webhook-secret rotate <account_id> [--json]
 *   real-locations list [--json]
 *   real-locations test <name> [--json]
 *
 * The real-locations commands run the proxy service instead, with the catalogue the
 * service would load (so a broken preset or file fails here as it would at start).
 */
import { ServiceBroker } from 'moleculer';
import { brokerOptions } from '../moleculer.config';
import { parseAddons } from '../services/billing/accounts';
import { type Config, ConfigError, loadConfig } from '../services/shared/config';
import { type Events, type PlanRecord, broadcast, call } from '../services/shared/contracts';
import { redactText } from '../services/shared/logging';
import { startSystem } from '../runtime/system';

const USAGE = `Usage: npm run --silent admin -- <command>

  accounts create --plan <plan> [--addons byo_ai,byo_proxy,ai_credits,bandwidth_2gb:N] [--json]
  accounts list [--json]
  accounts set-plan <account_id> --plan <plan> [--addons <list>] [--json]
  keys rotate <account_id> [--json]
  plans list [--json]
  plans set <name> [--screenshots <N>] [--paid true|false] [--concurrency <N>] [--queue <N>] [--json]
  webhook-secret show <account_id> [--json]
  webhook-secret rotate <account_id> [--json]
  real-locations list [--json]
  real-locations test <name> [--json]

The access token is shown once, when an account is created or its key rotated.
plans set changes the fields given; a new plan needs --screenshots. --concurrency: captures
an account may run at once; --queue: how many more it may have waiting for a browser.`;

class UsageError extends Error {}

/** Each command's flags (those it requires among them) and how many words follow it (real-locations test: a name of any length). */
const COMMANDS: Readonly<Record<string, { flags: readonly string[]; required?: readonly string[]; words: number | 'any' }>> = {
  'accounts create': { flags: ['plan', 'addons', 'json'], required: ['plan'], words: 0 },
  'accounts list': { flags: ['json'], words: 0 },
  'accounts set-plan': { flags: ['plan', 'addons', 'json'], required: ['plan'], words: 1 },
  'keys rotate': { flags: ['json'], words: 1 },
  'plans list': { flags: ['json'], words: 0 },
  'plans set': { flags: ['screenshots', 'paid', 'concurrency', 'queue', 'json'], words: 1 },
  'webhook-secret show': { flags: ['json'], words: 1 },
  'webhook-secret rotate': { flags: ['json'], words: 1 },
  'real-locations list': { flags: ['json'], words: 0 },
  'real-locations test': { flags: ['json'], words: 'any' },
};

/**
 * A command's flags and words as its usage line says, before anything starts: a flag it does
 * not take (a typo, `--plna paid`) or a word too many would otherwise be ignored, and the
 * command done without it.
 */
function checkCommand(key: string, words: string[], flags: Record<string, string | true>): void {
  const command = COMMANDS[key];
  if (!command) throw new UsageError(`Unknown command "${key}"`);
  const unknown = Object.keys(flags).filter((name) => !command.flags.includes(name));
  if (unknown.length) {
    throw new UsageError(`${key} takes no --${unknown[0]}; its options: ${command.flags.map((name) => `--${name}`).join(', ')}`);
  }
  const extra = command.words === 'any' ? [] : words.slice(2 + command.words);
  if (extra.length) throw new UsageError(`${key}: unexpected "${extra.join(' ')}"`);
  for (const name of command.required ?? []) flag(flags, name, true);
}

function parseArgs(argv: string[]): { words: string[]; flags: Record<string, string | true> } {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split('=', 2) as [string, string | undefined];
      const next = argv[i + 1];
      if (inline !== undefined) flags[name] = inline;
      else if (next !== undefined && !next.startsWith('--') && name !== 'json') {
        flags[name] = next;
        i++;
      } else flags[name] = true;
    } else words.push(arg);
  }
  return { words, flags };
}

function flag(flags: Record<string, string | true>, name: string, required: boolean): string | undefined {
  const v = flags[name];
  if (v === true) throw new UsageError(`--${name} needs a value`);
  if (v === undefined && required) throw new UsageError(`--${name} is required`);
  return v;
}

/**
 * Tells the running billing instances of a change made here, so that none answers from what it
 * keeps (ACCOUNT_CACHE_MS): with a transporter (the full stack), a broker with no service joins it
 * just long enough to broadcast 'billing.accountsChanged'. Without one (embedded: the service is
 * another process on the same SQLite file) it cannot reach them: they forget within
 * ACCOUNT_CACHE_MS (docs/operations.md).
 */
async function announce(config: Readonly<Config>, change: Events['billing.accountsChanged']): Promise<void> {
  if (!config.transporter) return;
  const broker = new ServiceBroker({
    ...brokerOptions({ ...config, logLevel: 'warn' }, process.stderr),
    nodeID: `admin-cli-${process.pid}-${Date.now().toString(36)}`,
  });
  await broker.start();
  try {
    // No billing running: nothing to tell.
    if (
      await broker.waitForServices(['billing'], 5000).then(
        () => true,
        () => false,
      )
    ) {
      // The other billing instances' INFO arrives with the first's, or moments after it.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await broadcast(broker, 'billing.accountsChanged', change, ['billing']);
    }
  } finally {
    await broker.stop();
  }
}

function describePlan(p: PlanRecord): string {
  return `${p.name}  ${p.paid ? 'paid' : 'free'}  ${p.screenshot_limit} screenshots/month  ${p.max_concurrent} at once, ${p.max_queued} waiting`;
}

async function main(): Promise<number> {
  const { words, flags } = parseArgs(process.argv.slice(2));
  const json = flags.json === true;
  const [group, command, target] = words;
  if (flags.help) {
    console.log(USAGE);
    return 0;
  }
  if (!group) throw new UsageError('No command given.');
  const key = `${group} ${command ?? ''}`.trim();
  checkCommand(key, words, flags);
  const base = loadConfig();
  // The notifier runs without sending (no poll, nothing pumped): the CLI only reads and rotates secrets.
  const services: Array<'billing' | 'notifier' | 'proxy'> =
    group === 'webhook-secret' ? ['billing', 'notifier'] : group === 'real-locations' ? ['proxy'] : ['billing'];
  const { broker } = await startSystem(
    { ...base, services, transporter: null, logLevel: 'warn' },
    {
      notifier: { autoPoll: false, send: false },
      // Its stdout is its answer (scripts read --json from it); log lines go to stderr.
      logStream: process.stderr,
    },
  );
  const print = (value: unknown, human: () => string) => console.log(json ? JSON.stringify(value, null, 2) : human());
  try {
    switch (key) {
      case 'accounts create': {
        const addons = parseAddons(flag(flags, 'addons', false) ?? '');
        const created = await call(broker, 'billing.createAccount', { plan: flag(flags, 'plan', true) as string, addons });
        print(created, () => `account_id:   ${created.account_id}\naccess_token: ${created.access_token}\n(The token is shown only now; store it safely.)`);
        return 0;
      }
      case 'accounts list': {
        const accounts = await call(broker, 'billing.listAccounts', {});
        print(accounts, () =>
          accounts.length
            ? accounts
                .map(
                  (a) =>
                    `${a.account_id}  plan=${a.plan}  addons=${
                      Object.entries(a.addons)
                        .map(([k, v]) => (v === 1 ? k : `${k}:${v}`))
                        .join(',') || '-'
                    }  keys=${a.active_keys}  created=${a.created_at}`,
                )
                .join('\n')
            : 'No accounts yet.',
        );
        return 0;
      }
      case 'accounts set-plan': {
        if (!target) throw new UsageError('accounts set-plan needs an account id');
        const addonsRaw = flag(flags, 'addons', false);
        const summary = await call(broker, 'billing.setPlan', {
          accountId: target,
          plan: flag(flags, 'plan', true) as string,
          ...(addonsRaw !== undefined ? { addons: parseAddons(addonsRaw) } : {}),
        });
        await announce(base, { accountId: target });
        print(summary, () => `${summary.account_id} is now on plan ${summary.plan} with addons ${JSON.stringify(summary.addons)}`);
        return 0;
      }
      case 'keys rotate': {
        if (!target) throw new UsageError('keys rotate needs an account id');
        const rotated = await call(broker, 'billing.rotateKey', { accountId: target });
        await announce(base, { accountId: target });
        print(rotated, () => `The old key is revoked.\naccess_token: ${rotated.access_token}`);
        return 0;
      }
      case 'plans list': {
        const plans = await call(broker, 'billing.listPlans', {});
        print(plans, () => plans.map(describePlan).join('\n'));
        return 0;
      }
      case 'plans set': {
        if (!target) throw new UsageError('plans set needs a plan name');
        const number = (name: string) => {
          const raw = flag(flags, name, false);
          if (raw !== undefined && !/^\d+$/.test(raw)) throw new UsageError(`--${name} must be a whole number, got "${raw}"`);
          // Beyond 2^53 a number is no longer held exactly: it would be stored rounded.
          if (raw !== undefined && !Number.isSafeInteger(Number(raw))) {
            throw new UsageError(`--${name} is too large: at most ${Number.MAX_SAFE_INTEGER}, got ${raw}`);
          }
          return raw === undefined ? undefined : Number(raw);
        };
        const paidFlag = flag(flags, 'paid', false);
        if (paidFlag !== undefined && paidFlag !== 'true' && paidFlag !== 'false') throw new UsageError(`--paid must be true or false, got "${paidFlag}"`);
        const fields = {
          screenshot_limit: number('screenshots'),
          max_concurrent: number('concurrency'),
          max_queued: number('queue'),
          paid: paidFlag === undefined ? undefined : paidFlag === 'true',
        };
        const plan = await call(broker, 'billing.upsertPlan', {
          name: target,
          ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
        });
        await announce(base, { plan: plan.name });
        print(plan, () => describePlan(plan));
        return 0;
      }
      case 'webhook-secret show':
      case 'webhook-secret rotate': {
        if (!target) throw new UsageError(`${key} needs an account id`);
        // An unknown account is refused, not given a secret.
        if (!(await call(broker, 'billing.listAccounts', {})).some((a) => a.account_id === target)) throw new Error(`No account "${target}".`);
        if (command === 'show') {
          const shown = await call(broker, 'notifier.webhookSecret', { accountId: target });
          print({ account_id: target, ...shown }, () => `webhook signing secret of ${target}: ${shown.secret}`);
        } else {
          const rotated = await call(broker, 'notifier.rotateSecret', { accountId: target });
          print(
            { account_id: target, ...rotated },
            () =>
              `new webhook signing secret of ${target}: ${rotated.secret}\nThe old secret keeps signing (a second signature) ` +
              `until ${rotated.previous_valid_until}.`,
          );
        }
        return 0;
      }
      case 'real-locations list': {
        const names = await call(broker, 'proxy.realLocations', {});
        print(names, () => (names.length ? names.join('\n') : 'No real locations configured (REAL_LOCATIONS_PROVIDER, REAL_LOCATIONS_FILE).'));
        return 0;
      }
      case 'real-locations test': {
        // A name may have spaces ("Los Angeles"): every word after the command.
        const name = words.slice(2).join(' ');
        if (!name) throw new UsageError('real-locations test needs a location name');
        const r = await call(broker, 'proxy.testLocation', { name });
        // What the route ended at: a region's country, a country's city, a file's pick.
        const asked = [r.via !== r.location ? r.via : null, r.target].filter(Boolean).join(': ');
        const through = asked ? `${asked}, through ${r.upstream}` : `through ${r.upstream}`;
        print(r, () => `${r.location}: exit IP ${r.exit_ip ?? 'unknown (PROXY_TEST_URL is not an IP echo)'} in ${r.ms} ms (${through})`);
        return 0;
      }
      default:
        throw new UsageError(`Unknown command "${key}"`);
    }
  } finally {
    await broker.stop();
  }
}

main()
  .then((code) => process.exit(code))
  .catch((err) => {
    // Redacted as a log line is: a driver's or a server's message may quote a password.
    if (err instanceof UsageError) console.error(`${err.message}\n\n${USAGE}`);
    else if (err instanceof ConfigError) console.error(`Configuration error: ${redactText(err.message)}`);
    else console.error(`Error: ${redactText(err instanceof Error ? err.message : String(err))}`);
    process.exit(2);
  });
