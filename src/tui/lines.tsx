/**
 * The TUI's unit of output: a screen row made of styled segments. Views are
 * pure functions that return rows already fitted to the width; <Rows> draws
 * them, one ink <Text> per row with wrapping off, so ink never re-wraps text
 * and no row can be wider than the terminal. Tones map to colours, or to
 * bold/inverse/dim only when NO_COLOR is set.
 */
import { Box, Text } from 'ink';
import { cells, clipCells } from './text.js';

export type Tone = 'plain' | 'dim' | 'title' | 'key' | 'warn' | 'danger' | 'ok' | 'selected' | 'badge';

export interface Seg {
  readonly text: string;
  readonly tone?: Tone;
}
export type Line = readonly Seg[];

export function line(text: string, tone: Tone = 'plain'): Line {
  return [{ text, tone }];
}

/** Cuts a row to `width` cells (a safety net: views already fold agent text). */
function fitLine(l: Line, width: number): Line {
  const out: Seg[] = [];
  let used = 0;
  for (const seg of l) {
    const w = cells(seg.text);
    if (used + w <= width) {
      out.push(seg);
      used += w;
      continue;
    }
    const rest = width - used;
    if (rest > 0) out.push({ text: clipCells(seg.text, rest), tone: seg.tone ?? 'plain' });
    break;
  }
  return out;
}

interface Style {
  color?: string;
  bold?: boolean;
  dimColor?: boolean;
  inverse?: boolean;
}

function styleOf(tone: Tone, noColor: boolean): Style {
  switch (tone) {
    case 'plain':
      return {};
    case 'dim':
      return { dimColor: true };
    case 'title':
      return { bold: true };
    case 'key':
      return noColor ? { bold: true } : { color: 'cyan', bold: true };
    case 'warn':
      return noColor ? { bold: true } : { color: 'yellow', bold: true };
    case 'danger':
      return noColor ? { bold: true, inverse: true } : { color: 'red', bold: true };
    case 'ok':
      return noColor ? {} : { color: 'green' };
    case 'selected':
      return { inverse: true };
    case 'badge':
      return noColor ? { inverse: true } : { color: 'black', inverse: true, bold: true };
  }
}

export function Rows(props: { readonly lines: readonly Line[]; readonly width: number; readonly noColor: boolean }) {
  return (
    <Box flexDirection="column" width={props.width}>
      {props.lines.map((l, i) =>
        l.length === 0 ? (
          <Box key={i} height={1} />
        ) : (
        <Text key={i} wrap="truncate">
          {fitLine(l, props.width).map((seg, j) => (
            <Text key={j} {...styleOf(seg.tone ?? 'plain', props.noColor)}>
              {seg.text}
            </Text>
          ))}
        </Text>
        ),
      )}
    </Box>
  );
}
