/** The error a synchronous call throws (validation tests); fails the test when nothing is thrown. */
export function errorOf(fn: () => unknown): { type: string; message: string; code: number } {
  try {
    fn();
  } catch (err) {
    return err as { type: string; message: string; code: number };
  }
  throw new Error('expected a validation error');
}
