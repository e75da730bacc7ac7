#!/usr/bin/env node
'use strict';
/**
 * wait-ready.js — wait until a Selenium Grid answers GET /status with value.ready === true.
 *
 *   node grid/wait-ready.js http://127.0.0.1:4444 [timeoutSeconds=60] [minNodes=1]
 *
 * Exit code 0 when ready, 1 on timeout or bad arguments. For docker-compose healthchecks,
 * CI scripts and operators. Note: Selenium reports ready=false while every slot is busy, so
 * use this for start-up, not as a liveness probe of a loaded Grid (use `GET /status` → HTTP 200).
 *
 * Also usable from code: `await waitReady(url, {timeoutMs, minNodes})` resolves the status value
 * or rejects with the last observed state. grid.js waits for the Grids it starts with it.
 */

const http = require('node:http');
const https = require('node:https');

/** GET a Grid endpoint (http or https) and parse its JSON body. */
function getStatus(url, timeoutMs) {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.get(url, { timeout: timeoutMs, headers: { accept: 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => {
        try {
          resolve(JSON.parse(body));
        } catch {
          reject(new Error(`HTTP ${res.statusCode}, not JSON: ${body.slice(0, 120)}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/**
 * @param {string} baseUrl  e.g. http://127.0.0.1:4444 (a trailing /status or /wd/hub is tolerated)
 * @param {{timeoutMs?: number, minNodes?: number, intervalMs?: number, nodesOnly?: boolean, giveUp?: () => string | undefined}} [opts]
 *   giveUp: asked before every poll; a reason (e.g. the Grid process exited) rejects with it at once.
 *   nodesOnly: minNodes nodes UP is enough, whether or not a slot is free (ready).
 */
async function waitReady(baseUrl, { timeoutMs = 60000, minNodes = 1, intervalMs = 500, nodesOnly = false, giveUp = () => undefined } = {}) {
  const base = baseUrl.replace(/\/+$/, '').replace(/\/status$/, '');
  const statusUrl = `${base}/status`;
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    const reason = giveUp();
    if (reason) throw new Error(reason);
    try {
      const json = await getStatus(statusUrl, Math.min(5000, Math.max(500, deadline - Date.now())));
      const v = json?.value || {};
      const nodes = Array.isArray(v.nodes) ? v.nodes : [];
      const up = nodes.filter((n) => n.availability === 'UP').length;
      last = `ready=${v.ready}, nodes UP=${up}${v.message ? `, "${v.message}"` : ''}`;
      // A plain chromedriver/standalone node may not list nodes: then trust `ready`.
      if (nodesOnly ? up >= minNodes : v.ready === true && (up >= minNodes || !Array.isArray(v.nodes))) return v;
    } catch (err) {
      last = err.message;
    }
    if (Date.now() >= deadline) {
      throw new Error(`Selenium Grid at ${base} not ready after ${Math.round(timeoutMs / 1000)} s (${last})`);
    }
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
  }
}

module.exports = { waitReady };

if (require.main === module) {
  const [url, timeoutArg, minNodesArg] = process.argv.slice(2);
  const timeoutS = timeoutArg === undefined ? 60 : Number(timeoutArg);
  const minNodes = minNodesArg === undefined ? 1 : Number.parseInt(minNodesArg, 10);
  if (!url || !/^https?:\/\//.test(url) || !(timeoutS >= 0) || !(minNodes >= 0)) {
    console.error('usage: node grid/wait-ready.js http://host:4444 [timeoutSeconds=60] [minNodes=1]');
    process.exit(1);
  }
  const t0 = Date.now();
  waitReady(url, { timeoutMs: timeoutS * 1000, minNodes }).then(
    (v) => {
      const n = Array.isArray(v.nodes) ? v.nodes.length : '?';
      console.log(`Selenium Grid at ${url} ready after ${Date.now() - t0} ms (${n} node(s))`);
      process.exit(0);
    },
    (err) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
