// The External Context MCP Profile v1: the contract as pure functions.
export * from "./contract.js";
export * from "./query.js";
export * from "./render.js";
