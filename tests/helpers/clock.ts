import type { Clock } from "../../src/kernel/clock.ts";

/** A clock tests move by hand, so UTC midnight arrives without sleeping. */
export class FakeClock implements Clock {
  #ms: number;
  constructor(start: string | number = "2026-11-21T12:00:00Z") {
    this.#ms = typeof start === "number" ? start : Date.parse(start);
  }
  now(): number {
    return this.#ms;
  }
  set(iso: string): void {
    this.#ms = Date.parse(iso);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
}
