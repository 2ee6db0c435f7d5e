// Building the page's elements. Agent content is only ever inserted as text (textContent),
// never as HTML: `el` sets attributes and text, nothing else.

export const $ = (selector) => document.querySelector(selector);

/** Creates an element: el("div", {class: "x", onclick: f}, child, "text", ...). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
