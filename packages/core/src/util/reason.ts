/**
 * Reasons are for people: one sentence with the fix, at most 300 characters. Longer
 * text (every path tried, every loader error) goes to a `detail` beside the reason.
 */
export const REASON_LIMIT = 300;

const MORE = " … (the rest is in status().detail)";

/** The reason as shown, and the full text as detail when it had to be cut. */
export function splitReason(text: string): { reason: string; detail?: string } {
  if (text.length <= REASON_LIMIT) return { reason: text };
  const room = REASON_LIMIT - MORE.length;
  const cut = text.lastIndexOf(" ", room);
  return { reason: `${text.slice(0, cut > room / 2 ? cut : room)}${MORE}`, detail: text };
}
