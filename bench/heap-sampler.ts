/**
 * Bytes allocated while some work runs, by allocating function: V8's sampling heap profiler through
 * the inspector, objects the GC collected included (a sample every `intervalBytes` on average,
 * scaled by V8 to an estimate of all allocations). It counts objects, not heap pages: unlike heap
 * growth plus what each GC freed (`allocatedPerCall` in run-path.ts), objects that survive a
 * scavenge are counted at their size, not in whole promotion buffers.
 */
import { Session } from "node:inspector/promises";

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly selfSize: number;
  readonly children: readonly ProfileNode[];
}

/** Bytes allocated by `work`, by site (`function file`: the file's last two path parts). */
export async function sampleAllocations(
  work: () => Promise<void>,
  intervalBytes = 32,
): Promise<Map<string, number>> {
  const session = new Session();
  session.connect();
  try {
    await session.post("HeapProfiler.enable");
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: intervalBytes,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    let stopped: { profile: { head: ProfileNode } };
    try {
      await work();
    } finally {
      stopped = (await session.post("HeapProfiler.stopSampling")) as typeof stopped;
    }
    return sitesOf(stopped.profile.head);
  } finally {
    session.disconnect();
  }
}

function sitesOf(head: ProfileNode): Map<string, number> {
  const bySite = new Map<string, number>();
  const walk = (node: ProfileNode): void => {
    const { functionName, url } = node.callFrame;
    const file = url.split("/").slice(-2).join("/");
    const site = `${functionName || "(anonymous)"} ${file}`.trim();
    if (node.selfSize > 0) bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(head);
  return bySite;
}

/** All bytes of a {@link sampleAllocations} answer. */
export function totalBytes(bySite: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const bytes of bySite.values()) total += bytes;
  return total;
}
