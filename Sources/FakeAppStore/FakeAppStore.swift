// The FakeAppStore module.
