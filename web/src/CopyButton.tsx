import { useEffect, useState } from "react";

/** Copies `text` and says it did (or that it could not: the clipboard needs a secure page),
 * for two seconds, in a live region so a screen reader hears it too. */
export function CopyButton({ text, label = "Copy", what }: { text: string; label?: string; what: string }) {
  const [said, setSaid] = useState<"copied" | "failed" | null>(null);
  useEffect(() => {
    if (said === null) return;
    const timer = setTimeout(() => setSaid(null), 2000);
    return () => clearTimeout(timer);
  }, [said]);

  async function copy() {
    try {
      await navigator.clipboard.writeText(text);
      setSaid("copied");
    } catch {
      setSaid("failed");
    }
  }

  return (
    <span className="copy">
      <button type="button" className="secondary small" onClick={copy} aria-label={`${label} ${what}`}>
        {label}
      </button>
      <span role="status" className="muted small">
        {said === "copied" ? "Copied." : said === "failed" ? "Could not copy: select the text and copy it." : ""}
      </span>
    </span>
  );
}
