// Each page's title and focus follow its heading, in one place rather than in every page:
// the tab's title is the main heading (kept current as it changes, say when an agent's name
// loads), and after a navigation the focus moves to that heading, so a screen reader reads
// the new page and the keyboard starts from its top.

import { useEffect, useRef } from "react";
import { lastNavigationMoved } from "./router";

const APP = "Agent memory";

function heading(): HTMLElement | null {
  return document.querySelector<HTMLElement>("main h1");
}

export function useHeadingTitle(): void {
  useEffect(() => {
    const main = document.querySelector("main");
    if (!main) return;
    const update = () => {
      const text = heading()?.textContent?.trim();
      const title = text ? `${text} · ${APP}` : APP;
      if (document.title !== title) document.title = title;
    };
    update();
    const observer = new MutationObserver(update);
    observer.observe(main, { childList: true, subtree: true, characterData: true });
    return () => observer.disconnect();
  }, []);
}

/** Moves the focus to the main heading when `path` changes to another page (not on the first
 * page, where the browser starts at the top already, nor when a page replaces its own
 * address, as the chat does once a first message made its conversation). */
export function useFocusOnNavigation(path: string): void {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    if (!lastNavigationMoved()) return;
    const target = heading() ?? document.querySelector<HTMLElement>("main");
    if (!target) return;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: false });
  }, [path]);
}
