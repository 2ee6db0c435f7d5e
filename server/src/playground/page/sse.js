// Console's minimal SSE reader: complete lines out of a stream's text, CR, LF or CRLF ended.

export class SseLines {
  constructor() {
    this.partial = "";
    this.afterCr = false;
  }
  /** Returns the complete lines in `text`: {kind: data|comment|blank|ignored, text}. */
  feed(text) {
    const lines = [];
    for (const ch of text) {
      if (this.afterCr) {
        this.afterCr = false;
        if (ch === "\n") continue;
      }
      if (ch === "\n" || ch === "\r") {
        lines.push(classify(this.partial));
        this.partial = "";
        this.afterCr = ch === "\r";
      } else {
        this.partial += ch;
      }
    }
    return lines;
  }
}

function classify(line) {
  if (line === "") return { kind: "blank", text: line };
  if (line.startsWith(":")) return { kind: "comment", text: line };
  const colon = line.indexOf(":");
  const name = colon < 0 ? line : line.slice(0, colon);
  if (name !== "data") return { kind: "ignored", text: line };
  let value = line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  return { kind: "data", text: line, data: value };
}
