# browser build (make wasm / serve / test-browser)
