/**
 * Why a CAR upload is refused (car_stream.ts throws it, the upload answers
 * 400 invalid_car or 413 too_many_blocks with its message): its own module so
 * the parser and the block check (car_block.ts) share it.
 */
/** Why a CAR was refused: the upload answers 400 invalid_car with the message either way. */
export type CarProblem = "malformed" | "unsupported_hash" | "block_mismatch" | "too_many_blocks";

export class CarFormatError extends Error {
  readonly problem: CarProblem;
  constructor(problem: CarProblem, message: string) {
    super(message);
    this.name = "CarFormatError";
    this.problem = problem;
  }
}
