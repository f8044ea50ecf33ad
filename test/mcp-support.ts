/**
 * Shared fixtures of the test/mcp-*.test.ts files: the fault server over stdio or Streamable HTTP
 * (McpServer or low-level), a governed client with recording hooks, and a temp dir per file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createGovernor,
  createMemoryStore,
  type Governor,
  type GovernorOptions,
  type HostError,
  type PolicyInput,
  type RetryContext,
  type Store,
} from "@governor/core";
import {
  captureRetryAfter,
  type GovernClientOptions,
  type GovernedClient,
  governClient,
  type McpClient,
  type RetryAfterFetch,
  toModelResult,
} from "@governor/mcp";
import {
  type HttpFault,
  type HttpFaultServer,
  processExists,
  type Scenario,
  startHttpServer,
  stdioServerParams,
  waitForExit,
} from "@governor/testkit";
import {
  Client as V2Client,
  StreamableHTTPClientTransport as V2StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as V2StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { forwardingStore } from "./support/store-doubles.ts";

export type TransportKind = "stdio" | "http";
export const TRANSPORTS: readonly TransportKind[] = ["stdio", "http"];

/** The SDK generation of a test client: `@modelcontextprotocol/sdk` 1.32 or `@modelcontextprotocol/client` 2.x. */
export type Sdk = "v1" | "v2";
export const SDKS: readonly Sdk[] = ["v1", "v2"];

/** Either SDK's client. */
export type AnyClient = Client | V2Client;

/** A new client of `sdk`, not connected. */
export function newClient(sdk: Sdk): AnyClient {
  const info = { name: "governor-mcp-tests", version: "0.1.0" };
  return sdk === "v2" ? new V2Client(info) : new Client(info);
}

/** The server's name in test policies. */
export const SERVER = "notes";

/** Retries fast (1–5 ms backoff), no shared retry budget in the way, breakers out of the way. */
export function testPolicy(extra: PolicyInput = {}): PolicyInput {
  return {
    ...extra,
    defaults: {
      retry: { baseDelayMs: 1, maxDelayMs: 5, maxHintMs: 500 },
      breaker: { threshold: 100 },
      ...extra.defaults,
    },
    retryBudget: { reserve: 10_000, ...extra.retryBudget },
    servers: {
      [SERVER]: {
        trustAnnotations: true,
        tools: {
          create_note: { idempotency: { honorsKeys: true } },
          write_then_drop: { idempotency: { honorsKeys: true } },
        },
      },
      ...extra.servers,
    },
  };
}

export interface ServerOptions {
  readonly scenario?: Scenario;
  readonly lowlevel?: boolean;
  readonly effectsFile?: string;
  /** HTTP only: answer POSTs with SSE streams instead of JSON. */
  readonly sse?: boolean;
  /** HTTP only. */
  readonly httpFaults?: HttpFault[];
  /** HTTP, low-level server only: a `tools/list` that never ends. */
  readonly endlessToolPages?: "fresh" | "same";
  /** HTTP, low-level server only: each `tools/list` page answers this many ms late. */
  readonly toolPageDelayMs?: number;
}

/** A fault server reachable over one transport; `connect` opens a new SDK client to it. */
export interface Endpoint {
  readonly kind: TransportKind;
  readonly http: HttpFaultServer | undefined;
  /**
   * Connects `client` (new or closed, of either SDK, with that SDK's transport) to the server: a
   * new child process for stdio.
   */
  connect(client: AnyClient, retryAfter?: RetryAfterFetch): Promise<void>;
  /** Pids of every child process started (stdio). */
  readonly pids: number[];
  close(): Promise<void>;
}

export async function startEndpoint(
  kind: TransportKind,
  options: ServerOptions = {},
): Promise<Endpoint> {
  const pids: number[] = [];
  const http =
    kind === "http"
      ? await startHttpServer({
          ...(options.scenario !== undefined && { scenario: options.scenario }),
          ...(options.lowlevel !== undefined && { lowlevel: options.lowlevel }),
          ...(options.effectsFile !== undefined && { effectsFile: options.effectsFile }),
          ...(options.httpFaults !== undefined && { httpFaults: options.httpFaults }),
          ...(options.endlessToolPages !== undefined && {
            endlessToolPages: options.endlessToolPages,
          }),
          ...(options.toolPageDelayMs !== undefined && {
            toolPageDelayMs: options.toolPageDelayMs,
          }),
          jsonResponse: !options.sse,
        })
      : undefined;
  return {
    kind,
    http,
    pids,
    async connect(client, retryAfter) {
      const v2 = client instanceof V2Client;
      if (http) {
        const url = new URL(http.url);
        const init = retryAfter ? { fetch: retryAfter.fetch } : {};
        if (v2) await client.connect(new V2StreamableHTTPClientTransport(url, init));
        else await client.connect(new StreamableHTTPClientTransport(url, init));
        return;
      }
      const params = stdioServerParams({
        ...(options.scenario !== undefined && { scenario: options.scenario }),
        ...(options.lowlevel !== undefined && { lowlevel: options.lowlevel }),
        ...(options.effectsFile !== undefined && { effectsFile: options.effectsFile }),
      });
      const transport = v2 ? new V2StdioClientTransport(params) : new StdioClientTransport(params);
      if (v2) await client.connect(transport as V2StdioClientTransport);
      else await client.connect(transport as StdioClientTransport);
      if (transport.pid !== null) pids.push(transport.pid);
    },
    async close() {
      await http?.close();
    },
  };
}

/** What the hooks of a test governor saw. */
export interface Recorded {
  readonly hostErrors: HostError[];
  readonly transportErrors: HostError[];
  readonly retries: RetryContext[];
}

export interface Governed<C extends McpClient = Client> {
  readonly governor: Governor;
  readonly governed: GovernedClient<C>;
  readonly client: C;
  readonly seen: Recorded;
  /** Clears what the hooks saw. */
  reset(): void;
}

export interface GovernedOptions {
  readonly policy?: PolicyInput;
  readonly governorOptions?: GovernorOptions;
  readonly clientOptions?: Partial<GovernClientOptions>;
  /**
   * Give the adapter a `reconnect` hook that connects a new transport to the same server; a
   * function wraps that connect (to make it fail or hang).
   */
  readonly reconnect?:
    | boolean
    | ((connect: () => Promise<void>, signal: AbortSignal) => Promise<void>);
  /** Capture HTTP Retry-After headers (with this capture, if one is given). @default true */
  readonly captureRetryAfter?: boolean | RetryAfterFetch;
  /** The `onHostError` answer. @default undefined (stop) */
  readonly hostAnswer?: "retry";
}

/** Connects a new 1.32 client to `endpoint` and governs it with recording hooks. */
export function governed(endpoint: Endpoint, options: GovernedOptions = {}): Promise<Governed> {
  return governedWith("v1", endpoint, options) as Promise<Governed>;
}

/** Connects a new client of `sdk` to `endpoint` and governs it with recording hooks. */
export async function governedWith(
  sdk: Sdk,
  endpoint: Endpoint,
  options: GovernedOptions = {},
): Promise<Governed<AnyClient>> {
  const seen = {
    hostErrors: [] as HostError[],
    transportErrors: [] as HostError[],
    retries: [] as RetryContext[],
  };
  const governor = createGovernor(testPolicy(options.policy), {
    metrics: false,
    onHostError: (error) => {
      seen.hostErrors.push(error);
      return options.hostAnswer === "retry" ? { action: "retry" } : undefined;
    },
    onRetry: (ctx) => {
      seen.retries.push(ctx);
    },
    ...options.governorOptions,
  });
  const retryAfter =
    options.captureRetryAfter === false
      ? undefined
      : options.captureRetryAfter === true || options.captureRetryAfter === undefined
        ? captureRetryAfter()
        : options.captureRetryAfter;
  const client = newClient(sdk);
  await endpoint.connect(client, retryAfter);
  const governedClient = governClient(client, {
    governor,
    server: SERVER,
    requestTimeoutMs: 2000,
    ...(retryAfter !== undefined && { retryAfter }),
    ...(options.reconnect && {
      reconnect: (signal: AbortSignal) => {
        const connect = () => endpoint.connect(client, retryAfter);
        return typeof options.reconnect === "function"
          ? options.reconnect(connect, signal)
          : connect();
      },
    }),
    onTransportError: (error) => {
      seen.transportErrors.push(error);
    },
    ...options.clientOptions,
  });
  return {
    governor,
    governed: governedClient,
    client,
    seen,
    reset() {
      seen.hostErrors.length = 0;
      seen.transportErrors.length = 0;
      seen.retries.length = 0;
    },
  };
}

/**
 * A memory store that remembers every idempotency key claimed through it, so a test can read the
 * ledger state of each logical call.
 */
export function tappedStore(): { store: Store; keys: string[] } {
  const inner = createMemoryStore();
  const keys: string[] = [];
  const store = forwardingStore(
    {
      claim: (key, argsHash, options) => {
        // The calls' keys, not their content entries in the index of writes in doubt (`gd_`).
        if (key.startsWith("gk_") && !keys.includes(key)) keys.push(key);
        return inner.claim(key, argsHash, options);
      },
    },
    inner,
  );
  return { store, keys };
}

/** The ledger state of every key claimed through a {@link tappedStore}. */
export async function ledgerStates(tapped: {
  store: Store;
  keys: readonly string[];
}): Promise<(string | undefined)[]> {
  return Promise.all(tapped.keys.map(async (k) => (await tapped.store.entry(k))?.state));
}

/** The text the model reads for an outcome. */
export function modelText(outcome: Parameters<typeof toModelResult>[0]): string {
  return textOf(toModelResult(outcome));
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
}

/** A temp dir for effects files, removed by `cleanup`. */
export function tempDir(): { file(name: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), "governor-mcp-"));
  return {
    file: (name) => join(dir, name),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Closes clients and endpoints, then checks that no child process is left over. */
export async function shutdown(
  clients: readonly AnyClient[],
  endpoints: readonly Endpoint[],
): Promise<number[]> {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(endpoints.map((e) => e.close()));
  const pids = endpoints.flatMap((e) => e.pids);
  await Promise.all(pids.map((pid) => waitForExit(pid)));
  return pids.filter((pid) => processExists(pid));
}

/**
 * For one describe block: a scripted fault server and a low-level one over `kind`, each behind a
 * governed client, started before the tests and shut down after them (no child process left).
 */
export function endpointPair(
  kind: TransportKind,
  options: ServerOptions,
): { readonly g: Governed; readonly low: Governed };
export function endpointPair(
  kind: TransportKind,
  options: ServerOptions,
  sdk: Sdk,
): { readonly g: Governed<AnyClient>; readonly low: Governed<AnyClient> };
export function endpointPair(
  kind: TransportKind,
  options: ServerOptions,
  sdk: Sdk = "v1",
): { readonly g: Governed<AnyClient>; readonly low: Governed<AnyClient> } {
  let endpoints: Endpoint[] = [];
  let pair: [Governed<AnyClient>, Governed<AnyClient>] | undefined;
  beforeAll(async () => {
    endpoints = await Promise.all([
      startEndpoint(kind, options),
      startEndpoint(kind, { lowlevel: true }),
    ]);
    pair = [
      await governedWith(sdk, endpoints[0] as Endpoint),
      await governedWith(sdk, endpoints[1] as Endpoint),
    ];
  });
  afterAll(async () => {
    const left = await shutdown(pair?.map((g) => g.client) ?? [], endpoints);
    expect(left).toEqual([]);
  });
  const get = (i: 0 | 1): Governed<AnyClient> => {
    if (!pair) throw new Error("endpointPair: used outside a test");
    return pair[i];
  };
  return {
    get g() {
      return get(0);
    },
    get low() {
      return get(1);
    },
  };
}

/** What {@link openPerTest}'s `open` answers: the endpoint, its governed client, its effects file. */
export interface Opened<C extends McpClient = Client> {
  readonly endpoint: Endpoint;
  readonly g: Governed<C>;
  /** Empty when the file's servers write no effects (`effects: false`). */
  readonly effectsFile: string;
}

export interface OpenPerTestOptions {
  /** The SDK of the clients. @default "v1" */
  readonly sdk?: Sdk;
  /** Server options every `open` starts with (its own win). */
  readonly server?: ServerOptions;
  /** Give each server an effects file of its own, in a temp dir removed after the file. @default true */
  readonly effects?: boolean;
}

type Open<C extends McpClient> = (
  kind: TransportKind,
  server?: ServerOptions,
  options?: GovernedOptions,
) => Promise<Opened<C>>;

/**
 * For one test file: `open` starts a fault server over `kind` and governs a new client on it;
 * after each test every client and endpoint opened is shut down, and no child process may be left.
 */
export function openPerTest(options?: OpenPerTestOptions & { readonly sdk?: "v1" }): Open<Client>;
export function openPerTest(options: OpenPerTestOptions): Open<AnyClient>;
export function openPerTest(options: OpenPerTestOptions = {}): Open<AnyClient> {
  const opened: { clients: Governed<AnyClient>[]; endpoints: Endpoint[] } = {
    clients: [],
    endpoints: [],
  };
  const tmp = options.effects === false ? undefined : tempDir();
  if (tmp) afterAll(() => tmp.cleanup());
  afterEach(async () => {
    const left = await shutdown(
      opened.clients.splice(0).map((g) => g.client),
      opened.endpoints.splice(0),
    );
    expect(left).toEqual([]);
  });
  let files = 0;
  return async (kind, server = {}, governedOptions = {}) => {
    const effectsFile = tmp?.file(`effects-${++files}.jsonl`);
    const endpoint = await startEndpoint(kind, {
      ...options.server,
      ...(effectsFile !== undefined && { effectsFile }),
      ...server,
    });
    opened.endpoints.push(endpoint);
    const g = await governedWith(options.sdk ?? "v1", endpoint, governedOptions);
    opened.clients.push(g);
    return { endpoint, g, effectsFile: effectsFile ?? "" };
  };
}
