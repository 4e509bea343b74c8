// The baseline of scripts/bench/shim-start.ts: the smallest MCP server the SDK makes, over stdio.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

const server = new McpServer({ name: 'bare', version: '1.0.0' });
await server.connect(new StdioServerTransport());
