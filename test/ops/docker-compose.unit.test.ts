import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { ALL_SERVICES } from '../../services/shared/config';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('docker-compose.yml (production layout)', () => {
  const doc = YAML.parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<
      string,
      {
        image?: string;
        build?: string | { context?: string; dockerfile?: string };
        volumes?: string[];
        stop_grace_period?: string;
        command?: string[];
        restart?: string;
        environment?: Record<string, string>;
        depends_on?: Record<string, unknown>;
        healthcheck?: { test?: string[] };
      }
    >;
    volumes?: Record<string, unknown>;
  };

  it('is valid YAML with the backing services, a Selenium hub and Chrome nodes', () => {
    expect(doc.services).to.include.all.keys('mysql', 'redis', 'nats', 'selenium-hub', 'chrome', 'migrate');
  });

  it('pins every image to an explicit version', () => {
    for (const [name, svc] of Object.entries(doc.services)) {
      expect(svc.image, name).to.match(/^[\w./-]+:[\w.-]+$/);
      expect(svc.image, name).not.to.match(/:latest$/);
    }
  });

  it('runs every service from one image, selected by SERVICES', () => {
    const images = new Set<string>();
    for (const name of ALL_SERVICES) {
      const svc = doc.services[name];
      expect(svc, name).to.exist;
      expect(svc?.environment?.SERVICES).to.equal(name);
      expect(svc?.environment?.TRANSPORTER).to.match(/^nats:\/\//);
      images.add(String(svc?.image));
    }
    expect(images.size).to.equal(1);
  });

  it('migrates as a one-shot step that every service waits for', () => {
    expect(doc.services.migrate?.command).to.deep.equal(['node', 'dist/db/migrate.js']);
    expect(doc.services.migrate?.restart).to.equal('no');
    expect(doc.services.api?.depends_on?.migrate).to.deep.equal({ condition: 'service_completed_successfully' });
  });

  it('checks every service container on /health: the api on its port, the others on their OPS_PORT', () => {
    for (const name of ALL_SERVICES) {
      const svc = doc.services[name];
      const probe = (svc?.healthcheck?.test ?? []).join(' ');
      const port = name === 'api' ? svc?.environment?.PORT : svc?.environment?.OPS_PORT;
      expect(port, name).to.match(/^\d+$/);
      expect(probe, name).to.include(`http://127.0.0.1:${port}/health`);
      if (name === 'api') expect(svc?.environment?.OPS_PORT, 'the api serves /health and /metrics on PORT').to.equal('');
    }
  });

  it("starts the Chrome nodes with --grid-url set to the hub's address, so se:cdp points at the hub", () => {
    // The node image's command: the hub URL comes from one variable (grid/Dockerfile.node).
    const dockerfile = fs.readFileSync(path.join(ROOT, 'grid', 'Dockerfile.node'), 'utf8');
    const cmd = dockerfile.split('\n').find((l) => l.startsWith('CMD ')) ?? '';
    const variable = /--grid-url \\"\$(\w+)\\"/.exec(cmd)?.[1];
    expect(variable, 'the node command passes --grid-url "$VAR"').to.be.a('string');
    const chrome = doc.services.chrome;
    expect(chrome?.build).to.deep.include({ dockerfile: 'grid/Dockerfile.node' });
    // compose gives it the hub's URL: the URL the services reach the hub at, the hub's service name and port.
    const hubUrl = doc.services.api?.environment?.SELENIUM_URL;
    expect(hubUrl).to.equal('http://selenium-hub:4444');
    expect(doc.services).to.have.property('selenium-hub');
    expect(chrome?.environment?.[variable as string], `chrome: ${variable}`).to.equal(hubUrl);
  });

  it('keeps the stored files, STORAGE_URL unset, on one volume at $DATA_DIR/files of every service that has a file store', () => {
    // The image's DATA_DIR, created and owned by the user the services run as (WORKDIR /app is root's).
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const dataDir = /^ENV DATA_DIR=(\S+)$/m.exec(finalStage)?.[1];
    expect(dataDir, 'the image sets DATA_DIR').to.be.a('string');
    const user = /^USER (\S+)$/m.exec(finalStage)?.[1];
    expect(user).to.equal('node');
    const prepared = finalStage.slice(0, finalStage.indexOf('\nUSER '));
    expect(prepared, 'the image creates $DATA_DIR/files').to.include(`mkdir -p ${dataDir}/files`);
    expect(prepared, 'owned by the service user').to.include(`chown -R ${user}:${user} ${dataDir}`);
    // Every role whose service creates a file store (services/shared/storage.ts).
    const stores = ALL_SERVICES.filter((name) => fs.readFileSync(path.join(ROOT, 'services', name, `${name}.service.ts`), 'utf8').includes('createFileStore('));
    expect(stores).to.include.members(['api', 'capture']);
    const mounts = new Set<string>();
    for (const name of stores) {
      const svc = doc.services[name];
      expect(svc?.environment?.STORAGE_URL, name).to.match(/^\$\{STORAGE_URL:-\}$/);
      expect(svc?.environment?.DATA_DIR, `${name}: the image's DATA_DIR`).to.equal(undefined);
      const mount = (svc?.volumes ?? []).find((v) => v.split(':')[1] === `${dataDir}/files`);
      expect(mount, `${name} mounts a volume at ${dataDir}/files`).to.be.a('string');
      mounts.add(String(mount));
    }
    expect([...mounts], 'the same volume in each').to.have.length(1);
    const volume = [...mounts][0]?.split(':')[0] as string;
    expect(doc.volumes ?? {}, 'a named volume').to.have.property(volume);
  });

  it("gives every service container the time to drain on SIGTERM that Kubernetes gives it, not Docker's 10 s", () => {
    for (const name of ALL_SERVICES) {
      const grace = /^(\d+)s$/.exec(doc.services[name]?.stop_grace_period ?? '')?.[1];
      expect(grace, `${name}: stop_grace_period in seconds`).to.be.a('string');
      // The Deployment's grace, which test/deploy/manifests.test.ts derives from the code's drain.
      const deployment = YAML.parseAllDocuments(fs.readFileSync(path.join(ROOT, 'deploy', 'kubernetes', 'base', `${name}.yaml`), 'utf8'))
        .map((d) => d.toJS() as { kind?: string; spec?: { template?: { spec?: { terminationGracePeriodSeconds?: number } } } })
        .find((d) => d.kind === 'Deployment');
      expect(Number(grace), name).to.equal(deployment?.spec?.template?.spec?.terminationGracePeriodSeconds);
    }
  });

  it('has the hub drop a dead Chrome node within seconds', () => {
    expect(doc.services['selenium-hub']?.environment?.SE_OPTS).to.match(/--healthcheck-interval 5\b/);
    // The local Grid's hub the same, and grid/README.md says what it is.
    const toml = /^healthcheck-interval = (\d+)$/m.exec(fs.readFileSync(path.join(ROOT, 'grid', 'config', 'grid.toml'), 'utf8'))?.[1];
    expect(toml).to.equal('5');
    expect(fs.readFileSync(path.join(ROOT, 'grid', 'README.md'), 'utf8')).to.match(new RegExp(`\`healthcheck-interval = ${toml}\``));
  });
});
