/// <reference lib="dom" />
/**
 * "Usage": today's quota as a <meter> with the same figures in words, and
 * the last 30 days (GET /api/usage) as a bar chart: inline SVG made with DOM
 * calls (the page's policy allows no inline markup to be parsed into it
 * from strings). The chart is a list to screen readers, one item per day,
 * each labelled with its date, bytes and uploads.
 */
import type { Usage, UsageDay } from "../../sdk/mod.ts";
import { byId, el, svg } from "./dom.ts";
import { formatBytes } from "./format.ts";
import type { Session } from "./session.ts";

const WIDTH = 720;
const HEIGHT = 150;
/** Room for the scale's labels on the left and the days' labels below. */
const LEFT = 64;
const BOTTOM = 22;
const PLOT = HEIGHT - BOTTOM;
const TOP = 8;
/** A day with any bytes stays visible next to a much bigger one. */
const MIN_BAR = 3;

export function mountUsageView(session: Session): { refresh(): Promise<void> } {
  const container = byId("usage", HTMLElement);
  return {
    async refresh() {
      try {
        const usage = await session.client.usage();
        container.replaceChildren(quotaMeter(usage), chart(usage));
      } catch (error) {
        container.replaceChildren(el("p", { class: "message" }, session.explain(error)));
      }
    },
  };
}

function quotaMeter(usage: Usage): HTMLElement {
  const used = Math.max(0, usage.quotaBytes - usage.remainingTodayBytes);
  return el(
    "div",
    { class: "quota" },
    el("label", { for: "quota-meter" }, "Used today"),
    el("meter", {
      id: "quota-meter",
      min: 0,
      max: usage.quotaBytes,
      value: used,
      low: usage.quotaBytes * 0.75,
      high: usage.quotaBytes * 0.9,
      optimum: 0,
      "aria-describedby": "quota-words",
    }),
    el(
      "p",
      { id: "quota-words", class: "hint" },
      `${formatBytes(used)} of ${formatBytes(usage.quotaBytes)} used today; ${
        formatBytes(usage.remainingTodayBytes)
      } left. It renews at 00:00 UTC.`,
    ),
  );
}

/**
 * The top of the scale: the busiest day rounded up to 1, 2 or 5 times a power
 * of 1024 bytes, at least 1 KiB, so its two grid lines always read as two
 * different sizes (with nothing uploaded: 1 KiB and 512 B, not 1 B twice).
 */
export function scaleTop(mostBytes: number): number {
  let unit = 1;
  while (unit * 1024 <= mostBytes) unit *= 1024;
  const step = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1024].find((n) => n * unit >= mostBytes)!;
  return Math.max(1024, step * unit);
}

function chart(usage: Usage): HTMLElement {
  const { days } = usage;
  const most = scaleTop(Math.max(0, ...days.map((day) => day.bytes)));
  const slot = (WIDTH - LEFT) / days.length;
  const total = days.reduce((sum, day) => sum + day.bytes, 0);
  const uploads = days.reduce((sum, day) => sum + day.uploads, 0);
  const graphic = svg(
    "svg",
    {
      class: "usage-chart",
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      role: "list",
      "aria-label": `Bytes uploaded per day, ${dayLabel(days[0].date)} to ${
        dayLabel(days[days.length - 1].date)
      }`,
    },
    // The scale: the tallest day and half of it (hidden from screen readers, who hear each day).
    ...[1, 0.5].flatMap((fraction) => {
      const y = PLOT - fraction * (PLOT - TOP);
      return [
        svg("line", { x1: LEFT, x2: WIDTH, y1: y, y2: y, class: "grid" }),
        svg(
          "text",
          { x: LEFT - 8, y: y + 4, class: "scale", "aria-hidden": "true" },
          formatBytes(Math.round(most * fraction)),
        ),
      ];
    }),
    svg("line", { x1: LEFT, x2: WIDTH, y1: PLOT + 0.5, y2: PLOT + 0.5, class: "axis" }),
    ...days.map((day, index) => bar(day, LEFT + index * slot, slot, most)),
    // Today and every seventh day before it; today's label ends at the right edge.
    ...days.flatMap((day, index) => {
      const back = days.length - 1 - index;
      if (back % 7 !== 0) return [];
      const x = back === 0 ? WIDTH : LEFT + index * slot + slot / 2;
      return [
        svg("text", { x, y: HEIGHT - 6, class: "tick", "aria-hidden": "true" }, dayLabel(day.date)),
      ];
    }),
  );
  return el(
    "figure",
    { class: "usage" },
    el(
      "figcaption",
      {},
      `Last ${days.length} days: ${formatBytes(total)} in ${uploads} upload${
        uploads === 1 ? "" : "s"
      }.`,
    ),
    graphic,
  );
}

function bar(day: UsageDay, x: number, slot: number, most: number): SVGGElement {
  const height = day.bytes === 0 ? 0 : Math.max(MIN_BAR, (day.bytes / most) * (PLOT - TOP));
  const label = `${dayLabel(day.date)}: ${formatBytes(day.bytes)} in ${day.uploads} upload${
    day.uploads === 1 ? "" : "s"
  }`;
  return svg(
    "g",
    { role: "listitem", "aria-label": label, "data-date": day.date },
    svg("title", {}, label),
    svg("rect", {
      x: x + slot * 0.15,
      y: PLOT - height,
      width: slot * 0.7,
      height,
      class: "bar",
      "data-bytes": day.bytes,
    }),
  );
}

/** "2026-11-22" as "22 Nov" in the reader's locale (the days are UTC days). */
function dayLabel(date: string): string {
  return new Date(`${date}T00:00:00Z`).toLocaleDateString(undefined, {
    day: "numeric",
    month: "short",
    timeZone: "UTC",
  });
}
