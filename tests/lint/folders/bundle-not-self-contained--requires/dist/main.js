"use strict";
const undici = require("undici");
const path = require("path");
