import { createServer } from "node:http";
const crypto = require("crypto");
