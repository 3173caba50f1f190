// The settings page's entry module. Each tab of the detail pane registers itself on import.

import "./overview.js";
import "./add_menu.js";
import { startConnectorsPage } from "./connectors.js";

startConnectorsPage();
