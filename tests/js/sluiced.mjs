// sluiced.mjs -- runs a real sluiced for the JavaScript test tiers
// (tests/sdk, tests/browser): a fresh directory, two free ports on
// 127.0.0.1, the configuration the caller writes, and a bounded wait for
// /healthz. Needs nothing from npm.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

// config({ dir, port, adminPort }) returns the YAML text; healthy(port)
// resolves true once the SQS listener answers /healthz (each tier asks in
// its own HTTP version). Resolves to { dir, port, adminPort, stderr, stop }.
export async function spawnSluiced(prefix, config, healthy) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const port = await freePort();
  const adminPort = await freePort();
  writeFileSync(join(dir, "sluice.yaml"), config({ dir, port, adminPort }));
  const child = spawn(join(buildDir, "sluiced"), ["--config", join(dir, "sluice.yaml")], {
    stdio: ["ignore", "inherit", "pipe"],
  });
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
  };
}
