/** How much of a limit some text uses, shown once it nears the limit (and said as an error
 * past it), so that nothing typed or pasted is cut or refused without a word. Inputs carry no
 * `maxLength`: the browser would cut a paste silently. */
export function Counter({ id, length, limit }: { id: string; length: number; limit: number }) {
  if (length < limit * 0.8) return null;
  const over = length > limit;
  return (
    <p id={id} className={over ? "counter field-error" : "counter muted"} aria-live="polite">
      {length.toLocaleString()} / {limit.toLocaleString()} characters
      {over && ` — ${(length - limit).toLocaleString()} too many; shorten it to send.`}
    </p>
  );
}

export const tooLong = (text: string, limit: number): boolean => text.length > limit;
