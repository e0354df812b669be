// A path-based router small enough to read: the location is state, links push history, and
// a route table (App.tsx) matches patterns like "/agents/:id/chat".

import { useEffect, useState, type AnchorHTMLAttributes, type MouseEvent } from "react";

const CHANGE = "app:navigate";

// Whether the last change of location was a move to another page (a link, back or forward)
// rather than a page correcting its own address (a replace): only a move takes the focus.
let moved = false;

export function navigate(to: string, replace = false): void {
  moved = !replace;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  window.dispatchEvent(new Event(CHANGE));
}

export const lastNavigationMoved = (): boolean => moved;

window.addEventListener("popstate", () => {
  moved = true;
});

export function useLocation(): URL {
  const [href, setHref] = useState(() => location.href);
  useEffect(() => {
    const update = () => setHref(location.href);
    window.addEventListener("popstate", update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return new URL(href);
}

export type Params = Record<string, string>;

/** The parameters of `pattern` in `path`, or null when it does not match. */
export function match(pattern: string, path: string): Params | null {
  const want = pattern.split("/").filter(Boolean);
  const got = path.split("/").filter(Boolean);
  if (want.length !== got.length) return null;
  const params: Params = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(":")) params[want[i].slice(1)] = decodeURIComponent(got[i]);
    else if (want[i] !== got[i]) return null;
  }
  return params;
}

export function Link({ href, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  function go(event: MouseEvent<HTMLAnchorElement>) {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    event.preventDefault();
    navigate(href);
  }
  return <a href={href} onClick={go} {...rest} />;
}
