// Figures and JSON as the page shows them.

export function plural(n, word) {
  return `${word}${n === 1 ? "" : "s"}`;
}

/** Millionths of a US dollar as dollars: `$0.000012`, `$1.50`. */
export function usd(micro) {
  if (!micro) return "$0";
  const text = (micro / 1e6).toFixed(micro >= 1e6 ? 2 : 6).replace(/0+$/, "");
  return `$${text.replace(/\.(\d?)$/, (_, d) => `.${d.padEnd(2, "0")}`)}`;
}

export function ms(value) {
  return value === null || value === undefined ? "–" : `${value} ms`;
}

/** JSON text indented, or the text as it is when it is not JSON. */
export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
