import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type StdioFaultServerOptions, stdioServerParams } from "./stdio.ts";

const CLIENT_INFO = { name: "governor-testkit-client", version: "0.1.0" };

/** Connects a new SDK `Client` to `server` over a linked in-memory transport pair. */
export async function connectInMemory(server: {
  connect(transport: Transport): Promise<void>;
}): Promise<{ client: Client; clientTransport: InMemoryTransport }> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client(CLIENT_INFO);
  await client.connect(clientTransport);
  return { client, clientTransport };
}

/** Spawns the fault server as a child process and connects a new SDK `Client` to it over stdio. */
export async function connectStdio(
  options: StdioFaultServerOptions = {},
): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport(stdioServerParams(options));
  const client = new Client(CLIENT_INFO);
  await client.connect(transport);
  return { client, transport };
}

/**
 * Connects a new SDK `Client` to a Streamable HTTP endpoint (e.g. `startHttpServer().url`). The
 * SDK's HTTP client is imported on first use, so in-memory and stdio users never load it.
 */
export async function connectHttp(
  url: string,
  fetchImpl?: typeof fetch,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const { StreamableHTTPClientTransport } = await import(
    "@modelcontextprotocol/sdk/client/streamableHttp.js"
  );
  const transport = new StreamableHTTPClientTransport(
    new URL(url),
    fetchImpl !== undefined ? { fetch: fetchImpl } : {},
  );
  const client = new Client(CLIENT_INFO);
  await client.connect(transport);
  return { client, transport };
}

/** Resolves once process `pid` no longer exists (false if it still runs after `timeoutMs`). */
export async function waitForExit(pid: number, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!processExists(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return !processExists(pid);
}

/** Whether a process with this pid exists (signal 0 probe). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
