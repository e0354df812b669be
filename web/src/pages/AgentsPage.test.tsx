import { afterEach, describe, expect, it, vi } from "vitest";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { setAuthMode } from "../api";
import { AgentsPage } from "./AgentsPage";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const answer = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

describe("a page whose reading failed", () => {
  it("offers to read it again, and shows it once that works", async () => {
    setAuthMode("local");
    let reads = 0;
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => {
        reads += 1;
        return reads === 1
          ? answer(503, { code: "store_unavailable", message: "The store is not answering." })
          : answer(200, []);
      }),
    );
    render(<AgentsPage />);
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("The store is not answering.");
    expect(alert.textContent).not.toContain("store_unavailable");
    await act(async () => fireEvent.click(screen.getByRole("button", { name: "Try again" })));
    expect(await screen.findByText("No agents yet. Create one to start chatting.")).toBeTruthy();
    expect(screen.queryByRole("alert")).toBeNull();
    expect(reads).toBe(2);
  });
});
