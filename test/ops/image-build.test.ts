/**
 * The image is built from the service's code only (tsconfig.build.json, as the Dockerfile
 * builds it): no test or bench file, nor anything they alone use, is compiled into it, and
 * the build context leaves them out.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('the image build (tsconfig.build.json)', function () {
  this.timeout(120_000);

  it('is what the Dockerfile compiles, and the build context leaves tests, benches, docs and .env out', () => {
    expect(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')).to.match(/tsc -p tsconfig\.build\.json/);
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    expect(ignored).to.include.members(['test', 'bench', 'docs', 'deploy']);
    // Nor the operator's compose settings (SECRETS_KEY, passwords): COPY . . would put them in the image.
    expect(ignored).to.include('.env');
  });

  it('compiles the services, the runtime, the CLIs and the migrations, and no file of test/ or bench/', () => {
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const files = execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--listFilesOnly'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.startsWith(ROOT) && !f.includes(`${path.sep}node_modules${path.sep}`))
      .map((f) => path.relative(ROOT, f));
    const top = new Set(files.map((f) => f.split(path.sep)[0]));
    expect([...top].sort()).to.deep.equal(['bin', 'db', 'grid', 'moleculer.config.ts', 'ops', 'runtime', 'services'].sort());
    expect(files).to.include.members([path.join('bin', 'serve.ts'), path.join('runtime', 'system.ts'), path.join('services', 'capture', 'capture.service.ts')]);
  });
});
