// sluiced.mjs -- runs a real sluiced for the JavaScript test tiers
// (tests/sdk, tests/browser): a fresh directory, two free ports on
// 127.0.0.1, the configuration the caller writes, and a bounded wait for
// /healthz. Needs nothing from npm.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const buildDir = process.env.SLUICE_BUILD_DIR ?? new URL("../../build", import.meta.url).pathname;

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

// A killed test must not leave its servers running. Node's child_process
// cannot ask for a parent-death signal, so sluiced is started through
// util-linux's setpriv --pdeathsig KILL (the kernel kills it when node
// dies, however node dies; only a node killed in the instant between
// fork and setpriv's prctl escapes it), and the servers still running
// are killed when node exits or is stopped by a signal.
const setpriv = "/usr/bin/setpriv";
const running = new Set();
function killRunning() {
  for (const child of running) child.kill("SIGKILL");
}
process.on("exit", killRunning);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(sig, () => {
    killRunning();
    process.kill(process.pid, sig); // the default action, now that this handler is gone
  });
}

// config({ dir, port, adminPort }) returns the YAML text; healthy(port)
// resolves true once the SQS listener answers /healthz (each tier asks in
// its own HTTP version). ports ({ port, adminPort }, optional) fixes the
// listeners' ports, for a cluster whose nodes list each other's. Resolves
// to { dir, port, adminPort, stderr, stop, kill }.
export async function spawnSluiced(prefix, config, healthy, ports = {}) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const port = ports.port ?? await freePort();
  const adminPort = ports.adminPort ?? await freePort();
  writeFileSync(join(dir, "sluice.yaml"), config({ dir, port, adminPort }));
  const argv = [join(buildDir, "sluiced"), "--config", join(dir, "sluice.yaml")];
  const [file, ...args] = existsSync(setpriv) ? [setpriv, "--pdeathsig", "KILL", "--", ...argv] : argv;
  const child = spawn(file, args, { stdio: ["ignore", "inherit", "pipe"] });
  running.add(child);
  child.on("exit", () => running.delete(child));
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  for (let i = 0; i < 200; i++) {
    if (await healthy(port)) break;
    if (child.exitCode !== null) throw new Error(`sluiced exited early: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
    if (i === 199) { child.kill("SIGKILL"); throw new Error(`sluiced did not become healthy: ${stderr}`); }
  }
  return {
    dir,
    port,
    adminPort,
    stderr: () => stderr,
    async stop() {
      child.kill("SIGTERM");
      const result = await exited;
      rmSync(dir, { recursive: true, force: true });
      return result;
    },
    // SIGKILL, as a node dies; its directory stays until stop().
    async kill() {
      child.kill("SIGKILL");
      return exited;
    },
  };
}
