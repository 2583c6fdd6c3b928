/// <reference lib="dom" />
/**
 * Building the page's nodes in code. The page's Content-Security-Policy
 * allows no inline script or style, and whatever a file, the server or a
 * person supplies must land in the page as text, never as HTML: so nodes are
 * made with createElement and text with text nodes, and this small factory is
 * all the templating the page needs.
 */

export type Child = Node | string | number | null | undefined | false;
export type Attributes = Record<string, string | number | boolean | null | undefined>;

/** An element with attributes (false/null/undefined: left out; true: present) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  element.append(...nodesOf(children));
  return element;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element, as el() makes HTML ones. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  element.append(...nodesOf(children));
  return element;
}

function setAttributes(element: Element, attributes: Attributes): void {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? "" : String(value));
  }
}

function nodesOf(children: Child[]): (Node | string)[] {
  return children.flatMap((child) =>
    child === null || child === undefined || child === false
      ? []
      : [typeof child === "number" ? String(child) : child]
  );
}

/** A table with one row of column headings, named by the element with id `labelledBy`. */
export function dataTable(
  labelledBy: string,
  headings: string[],
  body: HTMLTableSectionElement,
): HTMLTableElement {
  return el(
    "table",
    { "aria-labelledby": labelledBy },
    el("thead", {}, el("tr", {}, ...headings.map((text) => el("th", { scope: "col" }, text)))),
    body,
  );
}

/** The element with this id, of the expected class; a missing one is a bug of index.html. */
export function byId<T extends HTMLElement>(id: string, type: { new (): T }): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`index.html has no ${type.name} #${id}`);
  return element;
}

/** Shows or hides an element (the `hidden` attribute). */
export function show(element: HTMLElement, visible: boolean): void {
  element.hidden = !visible;
}

/** Puts a sentence in a status line, styled as an error or as news. */
export function say(element: HTMLElement, text: string, kind: "news" | "error" = "news"): void {
  element.textContent = text;
  element.classList.toggle("error", kind === "error");
}

/** Runs an async click handler with the button disabled meanwhile, so a double click acts once. */
export function onClickBusy(button: HTMLButtonElement, handler: () => Promise<void>): void {
  button.addEventListener("click", async () => {
    if (button.disabled) return;
    button.disabled = true;
    try {
      await handler();
    } finally {
      button.disabled = false;
    }
  });
}
