/**
 * docs/configuration.md lists exactly the variables services/shared/config.ts reads, so the
 * two cannot drift. The variables are found two ways and both count:
 * - in the source: every name config.ts hands to a reader with `env` (`str(env, 'X')`,
 *   `int(env, 'X', …)`, `bool`, `url`, `list`, `hostPort`, `addressRanges`, `refuseStray`'s
 *   lists, …) or reads as `env.X` / `env['X']`, found with the TypeScript parser;
 * - at run time: loadConfig and loadMcpStdioConfig given an environment that records every
 *   name they look up, which also catches a name built at run time.
 * The doc's variables are the code spans in the first column of its tables headed
 * "Variable". README's configuration summary may name only variables config.ts reads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';
import { loadConfig, loadMcpStdioConfig } from '../../services/shared/config';
import { ROOT, codeSpans, tables } from './markdown';

const CONFIG_SOURCE = path.join(ROOT, 'services', 'shared', 'config.ts');
const VARIABLE = /^[A-Z][A-Z0-9_]*$/;

/** The variable names config.ts's source reads: arguments beside `env`, and `env.X` / `env['X']`. */
function variablesInSource(source: string): Set<string> {
  const file = ts.createSourceFile('config.ts', source, ts.ScriptTarget.ES2022, true);
  const names = new Set<string>();
  const isEnv = (n: ts.Node) => ts.isIdentifier(n) && n.text === 'env';
  const addLiteral = (n: ts.Node) => {
    if (ts.isStringLiteralLike(n) && VARIABLE.test(n.text)) names.add(n.text);
    else if (ts.isArrayLiteralExpression(n)) n.elements.forEach(addLiteral);
  };
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && node.arguments[0] && isEnv(node.arguments[0])) node.arguments.slice(1).forEach(addLiteral);
    if (ts.isElementAccessExpression(node) && isEnv(node.expression)) addLiteral(node.argumentExpression);
    if (ts.isPropertyAccessExpression(node) && isEnv(node.expression) && VARIABLE.test(node.name.text)) names.add(node.name.text);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return names;
}

/** The names loadConfig and loadMcpStdioConfig look up when given nothing (and the stdio key). */
function variablesReadAtRunTime(): Set<string> {
  const read = new Set<string>();
  const recording = (given: Record<string, string>) =>
    new Proxy(given, {
      get(target, name) {
        if (typeof name === 'string') read.add(name);
        return target[name as string];
      },
    });
  loadConfig(recording({}));
  loadMcpStdioConfig(recording({ SNAPSERVICE_API_KEY: 'sk_test' }));
  return read;
}

/** The variables the tables headed "Variable" of a Markdown text name in their first column. */
function documentedVariables(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const table of tables(markdown)) {
    if (table.header[0] !== 'Variable') continue;
    for (const row of table.rows) for (const name of codeSpans(row[0] ?? [])) if (VARIABLE.test(name)) names.add(name);
  }
  return names;
}

const difference = (a: Set<string>, b: Set<string>) => [...a].filter((x) => !b.has(x)).sort();

describe('docs: configuration.md against config.ts', () => {
  const inSource = variablesInSource(fs.readFileSync(CONFIG_SOURCE, 'utf8'));
  const atRunTime = variablesReadAtRunTime();
  const read = new Set([...inSource, ...atRunTime]);
  const documented = documentedVariables(fs.readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8'));

  it('finds the variables config.ts reads (in its source, and the same at run time)', () => {
    expect(inSource.size).to.be.above(60);
    expect([...inSource]).to.include.members([
      'PORT',
      'DATABASE_URL',
      'CAPTURE_SESSIONS',
      'EGRESS_GATEWAY',
      'SERVICE_AI_MODEL',
      'REAL_LOCATIONS_GATEWAY',
      'SNAPSERVICE_API_KEY',
    ]);
    expect(difference(atRunTime, inSource), 'read at run time but not found in the source').to.deep.equal([]);
  });

  it('documents every variable config.ts reads', () => {
    const missing = difference(read, documented);
    expect(missing, `read by config.ts but missing from docs/configuration.md: ${missing.join(', ')}`).to.deep.equal([]);
  });

  it('documents no variable config.ts does not read', () => {
    const extra = difference(documented, read);
    expect(extra, `in docs/configuration.md but not read by config.ts: ${extra.join(', ')}`).to.deep.equal([]);
  });

  it("README's configuration summary names only variables config.ts reads", () => {
    const summary = documentedVariables(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    expect(summary.size, 'README has a summary table headed "Variable"').to.be.above(5);
    expect(difference(summary, read)).to.deep.equal([]);
  });

  it('finds names beside env in every form config.ts uses', () => {
    const found = variablesInSource(
      [
        "int(env, 'A_MS', 5, 1, 9);",
        "bool(env, 'B', true);",
        "refuseStray(env, 'LEAD', CHOICES, ['C1', 'C2']);",
        'env.D_DIRECT;',
        "env['E_INDEXED'];",
        "throw new ConfigError('NOT_READ must be set');",
        "str(other, 'NOT_ENV');",
      ].join('\n'),
    );
    expect([...found].sort()).to.deep.equal(['A_MS', 'B', 'C1', 'C2', 'D_DIRECT', 'E_INDEXED', 'LEAD']);
  });
});
