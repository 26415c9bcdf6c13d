// console-cluster.browser.mjs -- the web console's view of a cluster in
// Debian's chromium (headless, puppeteer-core): three real sluiced nodes
// on loopback, the console of node 1 on its Partitions page showing the
// three nodes reachable and a leader for the catalog and every partition;
// then node 3 is killed (SIGKILL) and the page shows it unreachable, and
// the groups it led led by the survivors. Screenshots go to
// BUILD/browser-artifacts/ (not into git).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { freePort, spawnSluiced } from "../js/sluiced.mjs";
import { admin, artifactsDir, CHROMIUM, ensureArtifactsDir, tenant, until } from "./harness.mjs";

const NODES = 3;
const PARTITIONS = 4;
let nodes = [];
let secretDir, browser, page;

// Distinct free ports: freePort() closes its socket, so two calls may
// return the same one.
async function distinctPorts(n) {
  const ports = new Set();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

// A node answers /healthz at all: alone it answers 503 until a quorum.
async function listening(port) {
  try {
    await fetch(`http://127.0.0.1:${port}/healthz`);
    return true;
  } catch (_) {
    return false;
  }
}

async function healthy(port) {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200;
  } catch (_) {
    return false;
  }
}

function config(i, ports, secretFile) {
  const lines = (j) => `    - {id: ${j + 1}, raft: 127.0.0.1:${ports[j].raft}, ` +
    `peer: 127.0.0.1:${ports[j].peer}, api: 127.0.0.1:${ports[j].api}}`;
  return ({ dir, port, adminPort }) => [
    `listen: 127.0.0.1:${port}`,
    `region: us-east-1`,
    `data_dir: ${dir}/data`,
    `partitions: ${PARTITIONS}`,
    `shard_size: 2`,
    `durability: os`,
    `io_threads: 2`,
    `admin:`,
    `  listen: 127.0.0.1:${adminPort}`,
    `  access_key_id: ${admin.key}`,
    `  secret_access_key: ${admin.secret}`,
    `tenants:`,
    `  ${tenant.name}:`,
    `    access_key_id: ${tenant.key}`,
    `    secret_access_key: ${tenant.secret}`,
    `cluster:`,
    `  node_id: ${i + 1}`,
    `  raft: 127.0.0.1:${ports[i].raft}`,
    `  peer: 127.0.0.1:${ports[i].peer}`,
    `  secret_file: ${secretFile}`,
    `  nodes:`,
    ...ports.map((_, j) => lines(j)),
  ].join("\n") + "\n";
}

async function shot(name) {
  await page.screenshot({ path: join(artifactsDir, `${name}.png`), fullPage: true });
}

// What the page shows: each node's state, each group's leader.
function view() {
  return page.evaluate(() => ({
    nodes: Object.fromEntries([...document.querySelectorAll("#cluster-nodes tbody tr")].map(
      (r) => [r.dataset.node, r.querySelector('[data-field="state"]').textContent])),
    leaders: Object.fromEntries([...document.querySelectorAll("#cluster-groups tbody tr")].map(
      (r) => [r.dataset.group, r.querySelector('[data-field="leader"]').textContent])),
  }));
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (scripts/setup does)`);
  ensureArtifactsDir();
  secretDir = mkdtempSync(join(tmpdir(), "sluice-browser-cluster-"));
  const secretFile = join(secretDir, "cluster.secret");
  writeFileSync(secretFile, randomBytes(48), { mode: 0o600 });
  const flat = await distinctPorts(4 * NODES);
  const ports = [...Array(NODES).keys()].map((i) => ({
    api: flat[4 * i], admin: flat[4 * i + 1], raft: flat[4 * i + 2], peer: flat[4 * i + 3],
  }));
  for (let i = 0; i < NODES; i++) {
    nodes.push(await spawnSluiced(`sluice-browser-node${i + 1}-`, config(i, ports, secretFile), listening,
      { port: ports[i].api, adminPort: ports[i].admin }));
  }
  await until("node 1 serves (the cluster elected its leaders)", () => healthy(nodes[0].port), 30000);
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1100 });
});

after(async () => {
  if (browser) await browser.close();
  for (const n of nodes) await n.stop();
  if (secretDir) rmSync(secretDir, { recursive: true, force: true });
});

test("the console shows the cluster, and a dead node", async () => {
  await page.goto(`http://127.0.0.1:${nodes[0].adminPort}/`);
  await page.type("#secret", admin.secret);
  await Promise.all([page.waitForNavigation(), page.$eval("#login-button", (b) => b.click())]);
  await page.evaluate(() => { location.hash = "partitions"; });
  await page.waitForSelector("#cluster-view:not([hidden])");

  await until("three reachable nodes and a leader for every group", async () => {
    const v = await view();
    return Object.keys(v.nodes).length === NODES &&
      Object.values(v.nodes).every((s) => s === "reachable") &&
      Object.keys(v.leaders).length === PARTITIONS + 1 &&
      Object.values(v.leaders).every((l) => l !== "none");
  }, 30000);
  await shot("cluster-01-three-nodes");

  await nodes[2].kill();
  await until("node 3 unreachable, and every group led by a survivor", async () => {
    const v = await view();
    return v.nodes["3"] === "unreachable" && v.nodes["2"] === "reachable" &&
      Object.values(v.leaders).every((l) => l === "1" || l === "2");
  }, 30000);
  await shot("cluster-02-node-3-dead");
});
