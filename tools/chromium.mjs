// Headless Chromium with WebGPU on SwiftShader (no GPU needed), through
// playwright-core from web/node_modules, for every test that runs a page.
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

// --enable-unsafe-webgpu exposes the SwiftShader (Vulkan on the CPU)
// fallback adapter; the others pin it and keep Chromium off the network.
export const ARGS = [
  '--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--enable-unsafe-webgpu',
  '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader', '--enable-features=Vulkan',
];

export function launch() {
  const { chromium } = createRequire(resolve(root, 'web/package.json'))('playwright-core');
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ARGS,
  });
}
