/** Every line a process printed, parsed: a line that is not a JSON object fails the test, naming it. */
export function jsonLines(output: string): Record<string, any>[] {
  return output
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`not a JSON line: ${line.slice(0, 300)}`);
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error(`not a JSON object: ${line.slice(0, 300)}`);
      return parsed as Record<string, any>;
    });
}
