/**
 * Turns of the event loop, counted as they happen: an immediate that schedules the next, until
 * stopped. A test reads `turns` from inside the code it watches to see how work is spread.
 */
export class TurnCounter {
  turns = 0;
  #immediate: NodeJS.Immediate;

  constructor() {
    const tick = () => {
      this.turns++;
      this.#immediate = setImmediate(tick);
    };
    this.#immediate = setImmediate(tick);
  }

  stop(): void {
    clearImmediate(this.#immediate);
  }
}
