import { useEffect, useRef, useState } from "react";

/** A destructive button that asks once more in place: the first press shows what will go
 * and a Cancel (focused, so Enter twice never destroys by accident). Cancel or Escape puts
 * the focus back on the button. */
export function InlineConfirm({
  label,
  text = "Delete",
  what,
  confirmLabel,
  onConfirm,
}: {
  /** The button's accessible name, say "Delete line 2 of human". */
  label: string;
  /** The button's visible text. */
  text?: string;
  /** What goes, said before it goes. */
  what: string;
  confirmLabel: string;
  onConfirm: () => Promise<void> | void;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refocus, setRefocus] = useState(false);
  const cancel = useRef<HTMLButtonElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) cancel.current?.focus();
    else if (refocus) {
      setRefocus(false);
      trigger.current?.focus();
    }
  }, [asking, refocus]);

  function dismiss() {
    setAsking(false);
    setRefocus(true);
  }

  if (!asking) {
    return (
      <button
        type="button"
        className="link danger-link"
        aria-label={label}
        ref={trigger}
        onClick={() => setAsking(true)}
      >
        {text}
      </button>
    );
  }
  return (
    <span
      className="confirm"
      role="group"
      aria-label={`Confirm: ${label}`}
      onKeyDown={(e) => {
        if (e.key === "Escape" && !busy) dismiss();
      }}
    >
      <span>{what}</span>
      <button
        type="button"
        className="danger"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          try {
            await onConfirm();
          } finally {
            setBusy(false);
            dismiss(); // still here when it failed: back to the button
          }
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" className="secondary" ref={cancel} onClick={dismiss}>
        Cancel
      </button>
    </span>
  );
}
