/**
 * `postern completion bash|zsh|fish`: a completion script generated from the
 * command table itself (commands, subcommands, long options, the hosts of
 * `setup`), so it cannot drift from the program. Words are all plain
 * identifiers from the command table; nothing user-supplied is interpolated.
 */
import { Argument, type Command } from 'commander';
import { PosternError } from '../../rules/errors.js';
import { Hosts } from '../setup/hosts.js';
import { examples } from '../help.js';

const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

interface Node {
  readonly name: string;
  readonly options: string[];
  readonly children: Node[];
  /** Values of the first argument, when they are a fixed set. */
  readonly values: string[];
}

const longFlags = (c: Command): string[] => c.options.map((o) => o.long).filter((l): l is string => l !== undefined).concat('--help');

function tree(c: Command): Node {
  const values = c.name() === 'setup' ? [...Hosts] : c.name() === 'completion' ? [...SHELLS] : [];
  return { name: c.name(), options: longFlags(c), children: c.commands.filter((x) => x.name() !== 'help').map(tree), values };
}

function bash(root: Node): string {
  const cases = root.children.map((c) => {
    const sub = c.children.map((s) => `        ${s.name}) words="${s.options.join(' ')}" ;;`).join('\n');
    const first = [...c.children.map((s) => s.name), ...c.values, ...c.options].join(' ');
    return [
      `    ${c.name})`,
      c.children.length === 0 ? `      words="${first}"` : `      if [ "$COMP_CWORD" -eq 2 ]; then words="${first}"; else case "\${COMP_WORDS[2]}" in\n${sub}\n        *) words="" ;;\n      esac; fi`,
      '      ;;',
    ].join('\n');
  });
  return [
    '# postern completion for bash: eval "$(postern completion bash)"',
    '_postern() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" words',
    '  if [ "$COMP_CWORD" -eq 1 ]; then',
    `    words="${[...root.children.map((c) => c.name), ...root.options].join(' ')}"`,
    '  else',
    '  case "${COMP_WORDS[1]}" in',
    ...cases,
    '    *) words="" ;;',
    '  esac',
    '  fi',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    'complete -o default -F _postern postern',
  ].join('\n');
}

function fish(root: Node): string {
  const lines = ['# postern completion for fish: postern completion fish | source', 'complete -c postern -f'];
  lines.push(`complete -c postern -n __fish_use_subcommand -a '${root.children.map((c) => c.name).join(' ')}'`);
  for (const o of root.options) lines.push(`complete -c postern -l ${o.slice(2)}`);
  for (const c of root.children) {
    const inC = `__fish_seen_subcommand_from ${c.name}`;
    if (c.children.length > 0 || c.values.length > 0) lines.push(`complete -c postern -n '${inC}' -a '${[...c.children.map((s) => s.name), ...c.values].join(' ')}'`);
    for (const o of c.options) lines.push(`complete -c postern -n '${inC}' -l ${o.slice(2)}`);
    for (const s of c.children) for (const o of s.options) lines.push(`complete -c postern -n '${inC}; and __fish_seen_subcommand_from ${s.name}' -l ${o.slice(2)}`);
  }
  return lines.join('\n');
}

function completionScript(shell: Shell, program: Command): string {
  const root = tree(program);
  switch (shell) {
    case 'bash':
      return bash(root);
    case 'zsh':
      // zsh runs the bash function through its bash-completion layer.
      return ['# postern completion for zsh: eval "$(postern completion zsh)"', 'autoload -U +X bashcompinit && bashcompinit', bash(root).split('\n').slice(1).join('\n')].join('\n');
    case 'fish':
      return fish(root);
  }
}

export function registerCompletion(program: Command): void {
  program
    .command('completion')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .description('print a shell completion script')
    .addHelpText('after', examples(['eval "$(postern completion bash)"     # in ~/.bashrc', 'eval "$(postern completion zsh)"      # in ~/.zshrc', 'postern completion fish > ~/.config/fish/completions/postern.fish']))
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new PosternError('USAGE', 'expected bash, zsh or fish');
      process.stdout.write(`${completionScript(shell as Shell, program)}\n`);
    });
}
