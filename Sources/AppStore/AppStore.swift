// The AppStore module.
