/** Test support: a check that a regular expression cannot backtrack catastrophically. */

/**
 * True when some group quantified without bound (`*`, `+`, `{n,}`) contains another unbounded
 * quantifier: the shape behind catastrophic backtracking.
 */
export function hasNestedUnboundedQuantifier(source: string): boolean {
  const contains: boolean[] = [false];
  let i = 0;
  const readQuantifier = (): "none" | "bounded" | "unbounded" => {
    const c = source[i];
    let kind: "none" | "bounded" | "unbounded" = "none";
    if (c === "*" || c === "+") {
      kind = "unbounded";
      i++;
    } else if (c === "?") {
      kind = "bounded";
      i++;
    } else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i));
      if (m !== null) {
        kind = m[2] !== undefined && m[3] === "" ? "unbounded" : "bounded";
        i += m[0].length;
      }
    }
    if (kind !== "none" && source[i] === "?") i++;
    return kind;
  };
  const markAtom = () => {
    if (readQuantifier() === "unbounded") contains[contains.length - 1] = true;
  };
  while (i < source.length) {
    const c = source[i];
    if (c === "\\") {
      i += 2;
      markAtom();
    } else if (c === "[") {
      i++;
      if (source[i] === "^") i++;
      if (source[i] === "]") i++;
      while (i < source.length && source[i] !== "]") i += source[i] === "\\" ? 2 : 1;
      i++;
      markAtom();
    } else if (c === "(") {
      contains.push(false);
      i++;
      const prefix = /^\?(?::|=|!|<=|<!|<[A-Za-z_]\w*>)/.exec(source.slice(i));
      if (prefix !== null) i += prefix[0].length;
    } else if (c === ")") {
      const inner = contains.pop() ?? false;
      i++;
      const q = readQuantifier();
      if (inner && q === "unbounded") return true;
      if (inner || q === "unbounded") contains[contains.length - 1] = true;
    } else if (c === "|") {
      i++;
    } else {
      i++;
      markAtom();
    }
  }
  return false;
}
